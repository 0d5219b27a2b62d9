// A real program for test_node's node_cpuprof: TypeScript's own compiler
// (Debian's node-typescript) compiling the project at argv[2], run under
// node --cpu-prof and recorded by bpftrace-rec -p at once, with the
// compiler's own account of where its thread's CPU time went, the answer
// the two profiles are held to.
//   node --cpu-prof tscdrive.js PROJECT MARKS
// It waits, idle, for SIGUSR2 (the test sends it once the recorder has
// node's unwind tables), then compiles through the compiler's API in three
// phases, each a function of its own here: phaseProgram (the config read,
// every file parsed: ts.createProgram), phaseCheck (the diagnostics: binder
// and type checker) and phaseEmit (the JavaScript written). MARKS gets "go
// T" before and "end T" after, T in microseconds of CLOCK_MONOTONIC
// (process.hrtime), the clock of the .cpuprofile's timestamps: its samples
// outside the window are left out of the comparison; then "phases total NS
// program NS check NS emit NS semantic NS", the main thread's time on a
// CPU in each (semantic: phaseSemantic, the type checker's part of check)
// (/proc/self/task/PID/schedstat's first field, ns: the kernel's count).
// It exits at the next SIGUSR2, which the test sends once the recording
// has ended: its frames are named from the live heap as the recorder reads
// them, which an exited process no longer has.
'use strict';
const fs = require('fs');
const path = require('path');

const [project, marks] = process.argv.slice(2);
const now = () => (process.hrtime.bigint() / 1000n).toString();
const lib = fs.existsSync('/usr/share/nodejs/typescript/lib/typescript.js')
	? '/usr/share/nodejs/typescript/lib/typescript.js'
	: require.resolve('typescript');
// Loaded before the wait: its load is no phase's, and outside the window.
const ts = require(lib);
const cpu = () => BigInt(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);

function phaseProgram(ts) {
	const host = {
		...ts.sys,
		onUnRecoverableConfigFileDiagnostic: (d) => {
			throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
		},
	};
	const cfg = ts.getParsedCommandLineOfConfigFile(path.join(project, 'tsconfig.json'), {}, host);
	return ts.createProgram({rootNames: cfg.fileNames, options: cfg.options});
}

// The type checker's part of the check, timed apart (its share of the
// semantic diagnostics' frames is where the profiles part most).
let semanticNs = 0n;
function phaseSemantic(program) {
	return program.getSemanticDiagnostics().length;
}

function phaseCheck(program) {
	const n = program.getSyntacticDiagnostics().length + program.getGlobalDiagnostics().length;
	const c = cpu();
	const m = phaseSemantic(program);
	semanticNs += cpu() - c;
	return n + m;
}

function phaseEmit(program) {
	return program.emit().emitSkipped;
}

// Keeps the event loop alive while it waits; wakes once a second.
const idle = setInterval(() => {}, 1000);
process.once('SIGUSR2', () => {
	clearInterval(idle);
	fs.writeFileSync(marks, `go ${now()}\n`);
	const c0 = cpu();
	const program = phaseProgram(ts);
	const c1 = cpu();
	const errors = phaseCheck(program);
	const c2 = cpu();
	const skipped = phaseEmit(program);
	const c3 = cpu();
	fs.appendFileSync(marks, `end ${now()}\nphases total ${c3 - c0} program ${c1 - c0} check ${c2 - c1} ` +
		`emit ${c3 - c2} semantic ${semanticNs}\nresult ${errors} diagnostics, emit ${skipped ? 'skipped' : 'done'}\n`);
	setInterval(() => {}, 1000);
	process.once('SIGUSR2', () => process.exit(0));
});
fs.writeFileSync(marks, 'waiting\n');
