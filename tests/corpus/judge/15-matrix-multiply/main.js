const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0).map(Number);
const [n, m, p] = data;
const a = (i, k) => data[3 + i * m + k];
const b = (k, j) => data[3 + n * m + k * p + j];
const out = [];
for (let i = 0; i < n; i++) {
  const row = [];
  for (let j = 0; j < p; j++) {
    let s = 0;
    for (let k = 0; k < m; k++) s += a(i, k) * b(k, j);
    row.push(s);
  }
  out.push(row.join(' '));
}
console.log(out.join('\n'));
