// scripts/bench-node.sh's workload: one thread spinning DEPTH (argv[2],
// default 50) JavaScript frames deep for argv[3] seconds (default 600).
// Each level is a call V8 does not inline (a recursion through a closure
// it cannot see through, the depth kept by the argument), so the stack
// holds DEPTH frames once Turbofan has compiled them too.
'use strict';
function leaf(n) {
	let x = 0;
	for (let i = 0; i < n; i++) x = (x * 31 + i) | 0;
	return x;
}
const levels = [];
function level(d) { return d > 0 ? levels[d & 1](d - 1) + 1 : leaf(20000); }
levels.push(level, (d) => level(d));
const depth = Number(process.argv[2] || 50), end = Date.now() + 1000 * Number(process.argv[3] || 600);
let s = 0;
while (Date.now() < end) s += level(depth);
console.log(s);
