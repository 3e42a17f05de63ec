const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const t = Number(data[0]);
for (let i = 1; i <= t; i++) {
  const w = data[i];
  const r = w.split('').reverse().join('');
  console.log(`${r} ${r === w ? 'yes' : 'no'}`);
}
