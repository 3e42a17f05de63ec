// Values reach 10^18, past 2^53: BigInt, whose division truncates toward zero.
const text = require('fs').readFileSync(0, 'utf8').split('\n')[0];
const tokens = text.match(/\d+|[-+*\/()]/g);
let pos = 0;
function expr() {
  let v = term();
  while (tokens[pos] === '+' || tokens[pos] === '-') {
    const op = tokens[pos++];
    const r = term();
    v = op === '+' ? v + r : v - r;
  }
  return v;
}
function term() {
  let v = factor();
  while (tokens[pos] === '*' || tokens[pos] === '/') {
    const op = tokens[pos++];
    const r = factor();
    v = op === '*' ? v * r : v / r;
  }
  return v;
}
function factor() {
  const tok = tokens[pos++];
  if (tok === '(') {
    const v = expr();
    pos++;
    return v;
  }
  return BigInt(tok);
}
console.log(expr().toString());
