// One of test_jvm.sh's two classes named Worker (tests/workloads/JChurn.java),
// loaded and unloaded in turn; its lines are looked up by their LINE: tags.
public class Worker implements Runnable {
	static long sink;

	public void run() {
		long x = 0;
		for (int k = 0; k < 20; k++) x += oddSpin(20000);
		Worker.sink = x;
	}

	static long oddSpin(long n) {
		long x = 0;
		for (long i = 0; i < n; i++) x += i * 7 ^ (x >>> 5); // LINE:odd
		return x;
	}
}
