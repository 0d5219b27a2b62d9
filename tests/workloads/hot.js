// A node workload with one hot JS function, for JIT naming tests.
// Usage: node --perf-prof --interpreted-frames-native-stack hot.js SECONDS
function hotLoop(n) {
	let s = 0;
	for (let i = 0; i < n; i++) s = (s + i * i) % 1000003;
	return s;
}
const end = Date.now() + 1000 * +(process.argv[2] || 3);
let x = 0;
while (Date.now() < end) x += hotLoop(100000);
console.log(x);
