const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/);
const n = Number(data[0]);
const groups = new Map();
for (let i = 1; i <= n; i++) {
  const key = data[i].split('').sort().join('');
  groups.set(key, (groups.get(key) || 0) + 1);
}
let largest = 0;
for (const size of groups.values()) if (size > largest) largest = size;
console.log(groups.size + '\n' + largest);
