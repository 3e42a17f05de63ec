const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0], m = data[1];
const adj = Array.from({ length: n + 1 }, () => []);
const indeg = new Array(n + 1).fill(0);
for (let i = 0; i < m; i++) {
  const u = data[2 + 2 * i], v = data[3 + 2 * i];
  adj[u].push(v);
  indeg[v]++;
}
// n is small: pick the smallest ready task by scanning a boolean set.
const ready = new Array(n + 1).fill(false);
for (let v = 1; v <= n; v++) if (indeg[v] === 0) ready[v] = true;
const order = [];
for (;;) {
  let u = 0;
  for (let v = 1; v <= n; v++) if (ready[v]) { u = v; break; }
  if (u === 0) break;
  ready[u] = false;
  order.push(u);
  for (const v of adj[u]) if (--indeg[v] === 0) ready[v] = true;
}
console.log(order.length < n ? 'IMPOSSIBLE' : order.join(' '));
