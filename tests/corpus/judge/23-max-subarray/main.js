const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0];
let best = -Infinity, cur = 0;
for (let i = 1; i <= n; i++) {
  cur = Math.max(data[i], cur + data[i]);
  if (cur > best) best = cur;
}
console.log(String(best));
