const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const t = Number(data[0]);
const out = [];
for (let i = 0; i < t; i++) {
  const a = BigInt(data[1 + 2 * i]);
  const b = BigInt(data[2 + 2 * i]);
  let x = a;
  let y = b;
  while (y !== 0n) {
    const r = x % y;
    x = y;
    y = r;
  }
  out.push(`${x} ${(a / x) * b}`);
}
console.log(out.join('\n'));
