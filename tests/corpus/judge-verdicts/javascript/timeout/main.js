const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0];
let best = data[1];
let cur = 0;
let i = 1;
while (i <= n) { // bug: i is never advanced, so this never ends (and allocates nothing)
  cur = Math.max(data[i], cur + data[i]);
  best = Math.max(best, cur);
}
console.log(String(best));
