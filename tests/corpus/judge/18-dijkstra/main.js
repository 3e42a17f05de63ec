const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const [n, m, s] = data;
const adj = Array.from({ length: n + 1 }, () => []);
for (let i = 0; i < m; i++) {
  const u = data[3 + 3 * i], v = data[4 + 3 * i], w = data[5 + 3 * i];
  adj[u].push([v, w]);
}
// A binary min-heap of [distance, node].
const heap = [];
function push(item) {
  heap.push(item);
  let i = heap.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (heap[p][0] <= heap[i][0]) break;
    [heap[p], heap[i]] = [heap[i], heap[p]];
    i = p;
  }
}
function pop() {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length > 0) {
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let k = i;
      if (l < heap.length && heap[l][0] < heap[k][0]) k = l;
      if (r < heap.length && heap[r][0] < heap[k][0]) k = r;
      if (k === i) break;
      [heap[k], heap[i]] = [heap[i], heap[k]];
      i = k;
    }
  }
  return top;
}
const dist = new Array(n + 1).fill(Infinity);
dist[s] = 0;
push([0, s]);
while (heap.length > 0) {
  const [d, u] = pop();
  if (d > dist[u]) continue;
  for (const [v, w] of adj[u]) {
    if (d + w < dist[v]) {
      dist[v] = d + w;
      push([d + w, v]);
    }
  }
}
console.log(dist.slice(1).map((d) => (d === Infinity ? -1 : d)).join(' '));
