const MOD = 1000000007n;
const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const t = Number(data[0]);
const out = [];
for (let q = 1; q <= t; q++) {
  const n = BigInt(data[q]);
  let a = 0n;
  let b = 1n;
  for (let bit = 62n; bit >= 0n; bit--) {
    const c = (a * (((2n * b - a) % MOD + MOD) % MOD)) % MOD;
    const d = (a * a + b * b) % MOD;
    if ((n >> bit) & 1n) {
      a = d;
      b = (c + d) % MOD;
    } else {
      a = c;
      b = d;
    }
  }
  out.push(a.toString());
}
console.log(out.join('\n'));
