// A real program for test_node's node_cpuprof: TypeScript's own compiler
// (tsc.js, Debian's node-typescript) compiling the project at argv[2], run
// under node --cpu-prof and recorded by bpftrace-rec -p at once.
//   node --cpu-prof tscdrive.js PROJECT MARKS
// It waits, idle, for SIGUSR2 (the test sends it once the recorder has
// node's unwind tables), then compiles. MARKS gets "go T" before and
// "end T" after, T in microseconds of CLOCK_MONOTONIC (process.hrtime),
// the clock of the .cpuprofile's timestamps: its samples outside the
// window are left out of the comparison.
'use strict';
const fs = require('fs');

const [project, marks] = process.argv.slice(2);
const now = () => (process.hrtime.bigint() / 1000n).toString();
const tsc = fs.existsSync('/usr/share/nodejs/typescript/lib/tsc.js')
	? '/usr/share/nodejs/typescript/lib/tsc.js'
	: require.resolve('typescript/lib/tsc.js');

// Keeps the event loop alive while it waits; wakes once a second.
const idle = setInterval(() => {}, 1000);
process.once('SIGUSR2', () => {
	clearInterval(idle);
	fs.writeFileSync(marks, `go ${now()}\n`);
	// tsc.js compiles at its load, with ts.sys.args from process.argv,
	// and ends with process.exit: held until the next SIGUSR2, which the
	// test sends once the recording has ended. Its frames are named from
	// the live heap as the recorder reads them, which an exited process
	// no longer has.
	const exit = process.exit.bind(process);
	process.exit = (code) => {
		fs.appendFileSync(marks, `end ${now()}\n`);
		setInterval(() => {}, 1000);
		process.once('SIGUSR2', () => exit(code));
	};
	process.argv = [process.argv[0], tsc, '-p', project];
	require(tsc);
});
fs.writeFileSync(marks, 'waiting\n');
