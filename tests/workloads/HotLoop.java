// A Java workload with one hot method, for the JIT guidance tests (compiled
// by the test with javac). Usage: java HotLoop SECONDS
public class HotLoop {
	static long hotLoop(long n) {
		long s = 0;
		for (long i = 0; i < n; i++)
			s = (s + i * i) % 1000003;
		return s;
	}

	public static void main(String[] args) {
		long end = System.currentTimeMillis() + 1000L * Long.parseLong(args.length > 0 ? args[0] : "3");
		long x = 0;
		while (System.currentTimeMillis() < end)
			x += hotLoop(100000);
		System.out.println(x);
	}
}
