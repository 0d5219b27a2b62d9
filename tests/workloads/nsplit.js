// The Node.js workload of tests/integration/test_node.sh: on the main thread
// and on a worker_threads worker: fnA, fnB and fnC call one loop 6:3:1, and
// every other round a 200-deep recursion and a class method (Holder.nmethod)
// run it too. Runs for argv[2] seconds (default 30).
'use strict';
const { Worker, isMainThread } = require('worker_threads');

function hotLoop(n) {
	let x = 0;
	for (let i = 0; i < n; i++) x = (x * 31 + i) | 0; // the hot loop's line
	return x;
}
function fnA() { return hotLoop(6000); }
function fnB() { return hotLoop(3000); }
function fnC() { return hotLoop(1000); }
function recurse(d) { return d > 0 ? recurse(d - 1) + 1 : hotLoop(3000); }
class Holder {
	nmethod() { return hotLoop(3000); }
}

function run(secs) {
	const end = Date.now() + secs * 1000, h = new Holder();
	let s = 0;
	while (Date.now() < end)
		for (let k = 0; k < 50; k++) {
			s += fnA() + fnB() + fnC();
			if (k % 2 === 0) s += recurse(200) + h.nmethod();
		}
	return s;
}

const secs = Number(process.argv[2] || 30);
if (isMainThread) {
	new Worker(__filename, { argv: [String(secs)] });
	run(secs);
} else {
	run(secs);
}
