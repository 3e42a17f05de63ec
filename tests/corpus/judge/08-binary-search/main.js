const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const n = Number(data[0]);
const a = data.slice(1, 1 + n).map(Number);
const q = Number(data[1 + n]);
const out = [];
for (let k = 0; k < q; k++) {
  const x = Number(data[2 + n + k]);
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  out.push(lo);
}
console.log(out.join('\n'));
