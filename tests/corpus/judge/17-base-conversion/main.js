const DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const [ns, bs] = require('fs').readFileSync(0, 'utf8').trim().split(/\s+/);
let n = BigInt(ns);
const b = BigInt(bs);
if (n === 0n) {
  console.log('0');
} else {
  const out = [];
  while (n > 0n) {
    out.push(DIGITS[Number(n % b)]);
    n /= b;
  }
  console.log(out.reverse().join(''));
}
