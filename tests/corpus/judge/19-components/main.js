const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0], m = data[1];
const parent = Array.from({ length: n + 1 }, (_, i) => i);
function find(x) {
  let root = x;
  while (parent[root] !== root) root = parent[root];
  while (parent[x] !== root) {
    const next = parent[x];
    parent[x] = root;
    x = next;
  }
  return root;
}
let groups = n;
for (let i = 0; i < m; i++) {
  const a = find(data[2 + 2 * i]), b = find(data[3 + 2 * i]);
  if (a !== b) {
    parent[a] = b;
    groups--;
  }
}
console.log(groups);
