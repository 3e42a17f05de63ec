const VALUES = [1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1];
const SYMBOLS = ['M', 'CM', 'D', 'CD', 'C', 'XC', 'L', 'XL', 'X', 'IX', 'V', 'IV', 'I'];
const LETTER = { I: 1, V: 5, X: 10, L: 50, C: 100, D: 500, M: 1000 };
const data = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/);
const q = Number(data[0]);
const out = [];
for (let k = 1; k <= q; k++) {
  const tok = data[k];
  if (/^[0-9]+$/.test(tok)) {
    let n = Number(tok);
    let s = '';
    for (let i = 0; i < VALUES.length; i++) {
      while (n >= VALUES[i]) { s += SYMBOLS[i]; n -= VALUES[i]; }
    }
    out.push(s);
  } else {
    let total = 0;
    for (let i = 0; i < tok.length; i++) {
      const v = LETTER[tok[i]];
      if (i + 1 < tok.length && LETTER[tok[i + 1]] > v) total -= v; else total += v;
    }
    out.push(String(total));
  }
}
console.log(out.join('\n'));
