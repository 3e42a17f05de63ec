const MOD = 1000000007;
const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0], t = data[1];
const ways = new Array(t + 1).fill(0);
ways[0] = 1;
for (let i = 0; i < n; i++) {
  const c = data[2 + i];
  for (let x = c; x <= t; x++) ways[x] = (ways[x] + ways[x - c]) % MOD;
}
console.log(ways[t]);
