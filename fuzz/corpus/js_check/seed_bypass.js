const k = 'con' + 'structor';
[][k][k]('return process')();
let x = 1 <!-- eval('1')
--> hidden
eval('1');
const r = arguments[1];
for (let i = 0; i < 3; i++) { [1][i]; }
class A { #p = 1; static { this.q = 2; } get v() { return this.#p; } }
const { constructor: c } = () => 1;
Object.prototype.x = 1;
import('fs');
with (o) { x }
`${`${"a"}`}`
