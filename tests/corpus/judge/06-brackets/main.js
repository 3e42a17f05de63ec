const data = require('fs').readFileSync(0, 'utf8').split(/\s+/).filter((s) => s.length > 0);
const pair = { ')': '(', ']': '[', '}': '{' };
function balanced(s) {
  const stack = [];
  for (const ch of s) {
    if (ch === '(' || ch === '[' || ch === '{') stack.push(ch);
    else if (stack.length === 0 || stack.pop() !== pair[ch]) return false;
  }
  return stack.length === 0;
}
const t = Number(data[0]);
const out = [];
for (let i = 1; i <= t; i++) out.push(balanced(data[i]) ? 'YES' : 'NO');
console.log(out.join('\n'));
