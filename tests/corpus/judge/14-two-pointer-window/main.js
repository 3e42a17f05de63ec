const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0).map(Number);
const n = data[0];
const budget = data[1];
let best = 0;
let total = 0;
let left = 0;
for (let right = 0; right < n; right++) {
  total += data[2 + right];
  while (total > budget) {
    total -= data[2 + left];
    left++;
  }
  best = Math.max(best, right - left + 1);
}
console.log(best);
