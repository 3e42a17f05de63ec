// C(60, 30) is past 2^53: BigInt.
const n = Number(require('fs').readFileSync(0, 'utf8').trim());
let row = [1n];
for (let k = 0; k < n; k++) {
  const next = [1n];
  for (let i = 0; i + 1 < row.length; i++) next.push(row[i] + row[i + 1]);
  next.push(1n);
  row = next;
}
console.log(row.join(' '));
