const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0).map(Number);
const n = data[0];
const tails = [];
for (let k = 1; k <= n; k++) {
  const x = data[k];
  let lo = 0;
  let hi = tails.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tails[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  tails[lo] = x;
}
console.log(tails.length);
