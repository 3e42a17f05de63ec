const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0).map(Number);
const n = data[0];
const cap = data[1];
const best = new Array(cap + 1).fill(0);
for (let i = 0; i < n; i++) {
  const w = data[2 + 2 * i];
  const v = data[3 + 2 * i];
  for (let c = cap; c >= w; c--) best[c] = Math.max(best[c], best[c - w] + v);
}
console.log(best[cap]);
