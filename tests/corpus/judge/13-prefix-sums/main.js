const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0).map(Number);
const n = data[0];
const q = data[1];
const prefix = new Float64Array(n + 1);
for (let i = 0; i < n; i++) prefix[i + 1] = prefix[i] + data[2 + i];
const out = [];
for (let k = 0; k < q; k++) {
  const l = data[2 + n + 2 * k];
  const r = data[3 + n + 2 * k];
  out.push(String(prefix[r] - prefix[l - 1]));
}
console.log(out.join('\n'));
