// A node workload with one hot JS function, for JIT naming tests.
// Usage: node --perf-prof --interpreted-frames-native-stack hot.js [SECONDS [wait]]
// Runs hotLoop for SECONDS (default 1) of the process's CPU time, not the
// clock's: node's start-up costs the same CPU however loaded the machine,
// and on a loaded one a clock's 3 s left hotLoop 61 % of the samples (0.33 s
// of CPU, 0.13 of it start-up), where the tests want 80. With `wait`, the
// loop (and its CPU time) starts at a SIGUSR2, which a test sends once its
// -p recording runs (SIGUSR1 is node's inspector's).
function hotLoop(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s = (s + i * i) % 1000003;
	return s;
}
const seconds = +(process.argv[2] || 1);
function run() {
	const t0 = process.cpuUsage();
	const used = () => {
		const u = process.cpuUsage(t0);
		return (u.user + u.system) / 1e6;
	};
	let x = 0;
	while (used() < seconds) x += hotLoop(100000);
	console.log(x);
}
if (process.argv[3] === 'wait') {
	// A signal's listener does not keep node alive: the interval does.
	const alive = setInterval(() => {}, 1 << 30);
	process.once('SIGUSR2', () => {
		clearInterval(alive);
		run();
	});
	console.log('ready');
} else {
	run();
}
