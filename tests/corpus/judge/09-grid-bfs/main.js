const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const r = Number(data[0]);
const c = Number(data[1]);
const grid = data.slice(2, 2 + r);
const dist = new Int32Array(r * c).fill(-1);
const queue = [];
for (let i = 0; i < r; i++) {
  for (let j = 0; j < c; j++) {
    if (grid[i][j] === 'S') {
      dist[i * c + j] = 0;
      queue.push(i * c + j);
    }
  }
}
let answer = -1;
for (let head = 0; head < queue.length; head++) {
  const cur = queue[head];
  const i = Math.floor(cur / c);
  const j = cur % c;
  if (grid[i][j] === 'T') {
    answer = dist[cur];
    break;
  }
  for (const [di, dj] of [[1, 0], [-1, 0], [0, 1], [0, -1]]) {
    const a = i + di;
    const b = j + dj;
    if (a >= 0 && a < r && b >= 0 && b < c && grid[a][b] !== '#' && dist[a * c + b] < 0) {
      dist[a * c + b] = dist[cur] + 1;
      queue.push(a * c + b);
    }
  }
}
console.log(answer);
