const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/).map(Number);
const n = data[0];
const iv = [];
for (let i = 0; i < n; i++) iv.push([data[1 + 2 * i], data[2 + 2 * i]]);
iv.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
const merged = [];
for (const [l, r] of iv) {
  const last = merged[merged.length - 1];
  if (last && l <= last[1]) {
    if (r > last[1]) last[1] = r;
  } else {
    merged.push([l, r]);
  }
}
console.log(merged.map(([l, r]) => l + ' ' + r).join('\n'));
