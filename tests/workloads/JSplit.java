// A Java workload whose answer is known by construction, for the HotSpot
// walk's tests (compiled by the test with javac, run with no flag):
//   - threads "split-0" (main) and "split-1" (a lambda's) call six(), three()
//     and one(), which call the same loop spin() for 6:3:1 of the work;
//   - thread "deep" recurses 200 levels through deep() to deepLeaf();
// once warm, C2 compiles them and inlines spin() into its callers.
// Usage: java JSplit SECONDS
public class JSplit {
	static volatile long sink;

	static long spin(long n) {
		long x = 0;
		for (long i = 0; i < n; i++) x += i ^ (x >>> 3); // LINE:hot
		return x;
	}

	static long six() {
		return spin(60000);
	}

	static long three() {
		return spin(30000);
	}

	static long one() {
		return spin(10000);
	}

	static long deepLeaf() {
		long x = 0;
		for (long i = 0; i < 20000; i++)
			x += i * 31 ^ (x >>> 5);
		return x;
	}

	static long deep(int d) {
		if (d <= 1)
			return deepLeaf();
		return deep(d - 1) + d;
	}

	public static void main(String[] args) throws Exception {
		long end = System.currentTimeMillis() + 1000L * Long.parseLong(args.length > 0 ? args[0] : "10");
		Runnable split = () -> {
			long s = 0;
			while (System.currentTimeMillis() < end) {
				s += six();
				s += three();
				s += one();
			}
			sink = s;
		};
		Thread worker = new Thread(split, "split-1");
		Thread deeper = new Thread(() -> {
			long s = 0;
			while (System.currentTimeMillis() < end)
				s += deep(200);
			sink = s;
		}, "deep");
		Thread.currentThread().setName("split-0");
		worker.start();
		deeper.start();
		split.run();
		worker.join();
		deeper.join();
	}
}
