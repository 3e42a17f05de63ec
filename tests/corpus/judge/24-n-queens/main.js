const n = Number(require('fs').readFileSync(0, 'utf8').trim().split(/\s+/)[0]);
const full = (1 << n) - 1;
function place(cols, d1, d2) {
  if (cols === full) return 1;
  let count = 0;
  let free = full & ~(cols | d1 | d2);
  while (free) {
    const bit = free & -free;
    free -= bit;
    count += place(cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1);
  }
  return count;
}
console.log(place(0, 0, 0));
