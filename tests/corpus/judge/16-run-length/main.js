const s = require('fs').readFileSync(0, 'utf8').split('\n')[0].trim();
let out = '';
for (let i = 0; i < s.length; ) {
  let j = i;
  while (j < s.length && s[j] === s[i]) j++;
  out += s[i] + String(j - i);
  i = j;
}
console.log(out);
