const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0], m = data[1];
// bug: tasks are numbered 1..n, so adj[n] is undefined and .push throws a TypeError
const adj = Array.from({ length: n }, () => []);
const indeg = new Array(n + 1).fill(0);
for (let i = 0; i < m; i++) {
  const u = data[2 + 2 * i], v = data[3 + 2 * i];
  adj[u].push(v);
  indeg[v]++;
}
const order = [];
const ready = [];
for (let v = 1; v <= n; v++) if (indeg[v] === 0) ready.push(v);
while (ready.length > 0) {
  ready.sort((a, b) => a - b);
  const u = ready.shift();
  order.push(u);
  for (const v of adj[u]) if (--indeg[v] === 0) ready.push(v);
}
console.log(order.length < n ? 'IMPOSSIBLE' : order.join(' '));
