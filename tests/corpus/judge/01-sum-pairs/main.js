const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const n = Number(data[0]);
const out = [];
for (let i = 0; i < n; i++) {
  out.push((BigInt(data[1 + 2 * i]) + BigInt(data[2 + 2 * i])).toString());
}
console.log(out.join('\n'));
