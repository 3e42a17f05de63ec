#!/usr/bin/env node
using x = f();
@d class A {}
import x from 'y';
await 0;
let x: number = 1;
const a = <div/>;
x = 1 +;
/(?<a>x)|(?<a>y)/v
