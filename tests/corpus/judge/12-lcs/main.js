const [a, b] = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
let prev = new Array(b.length + 1).fill(0);
for (let i = 0; i < a.length; i++) {
  const cur = new Array(b.length + 1).fill(0);
  for (let j = 0; j < b.length; j++) {
    cur[j + 1] = a[i] === b[j] ? prev[j] + 1 : Math.max(prev[j + 1], cur[j]);
  }
  prev = cur;
}
console.log(prev[b.length]);
