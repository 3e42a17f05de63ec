const lines = require('fs').readFileSync(0, 'utf8').split('\n');
const a = (lines[0] || '').trim();
const b = (lines[1] || '').trim();
let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
for (let i = 1; i <= a.length; i++) {
  const cur = [i];
  for (let j = 1; j <= b.length; j++) {
    const cost = a[i - 1] === b[j - 1] ? 0 : 1;
    cur.push(Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost));
  }
  prev = cur;
}
console.log(prev[b.length]);
