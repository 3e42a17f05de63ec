const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/);
const q = Number(data[0]);
const out = [];
for (let i = 0; i < q; i++) {
  let b = BigInt(data[2 + 3 * i]);
  const m = BigInt(data[3 + 3 * i]);
  let base = BigInt(data[1 + 3 * i]) % m;
  let result = 1n % m;
  while (b > 0n) {
    if (b & 1n) result = (result * base) % m;
    base = (base * base) % m;
    b >>= 1n;
  }
  out.push(result.toString());
}
console.log(out.join('\n'));
