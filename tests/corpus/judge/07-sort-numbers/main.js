const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const n = Number(data[0]);
const xs = data.slice(1, 1 + n).map(Number);
xs.sort((a, b) => a - b);
console.log(xs.join(' '));
