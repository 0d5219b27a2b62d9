// A Java workload whose answer is known by construction, for the HotSpot
// walk's tests (compiled by the test with javac, run with no flag):
//   - threads "split-0" (main) and "split-1" (a lambda's) call six(), three()
//     and one(), which call the same loop spin() for 6:3:1 of the work;
//   - thread "deep" recurses 200 levels through deep() to deepLeaf();
// once warm, C2 compiles them and inlines spin() into its callers.
// In mode park, threads park-0 and park-1 call parkSix(), parkThree() and
// parkOne(), which park 6, 3 and 1 ms (LockSupport.parkNanos): 6:3:1 of
// their off-CPU time on an idle machine; at each line on its stdin it
// prints the seconds the calls took by the clock ("parked SIX THREE ONE").
// In mode stack, one thread spins DEPTH Java frames deep (stack(), then
// spin()), for the walk's benchmark (scripts/bench-jvm.sh).
// Usage: java JSplit SECONDS [split|park|stack [DEPTH]]
public class JSplit {
	static volatile long sink;

	static long spin(long n) {
		long x = 0;
		for (long i = 0; i < n; i++) x += i ^ (x >>> 3); // LINE:hot
		return x;
	}

	// Calls of one size: C2 compiles the loop alike in each caller it is
	// inlined into, so that the work is 6:3:1 in time as in iterations.
	static long six() {
		long s = 0;
		for (int k = 0; k < 6; k++)
			s += spin(10000);
		return s;
	}

	static long three() {
		long s = 0;
		for (int k = 0; k < 3; k++)
			s += spin(10000);
		return s;
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

	static void parkSix() {
		java.util.concurrent.locks.LockSupport.parkNanos(6000000);
	}

	static void parkThree() {
		java.util.concurrent.locks.LockSupport.parkNanos(3000000);
	}

	static void parkOne() {
		java.util.concurrent.locks.LockSupport.parkNanos(1000000);
	}

	// The nanoseconds both threads spent in each call (six, three, one), by
	// the clock around it: the park, the wait for a CPU after it and the
	// call's own time, which the off-CPU time holds but for microseconds.
	static final java.util.concurrent.atomic.AtomicLongArray parked =
	    new java.util.concurrent.atomic.AtomicLongArray(3);

	static void park(long end) throws Exception {
		// A line on stdin: "parked SIX THREE ONE", seconds so far (the
		// test's window: at the recording's start and at its stop).
		Thread marks = new Thread(() -> {
			java.io.BufferedReader in =
			    new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
			try {
				while (in.readLine() != null) {
					System.out.printf("parked %.6f %.6f %.6f%n", parked.get(0) / 1e9,
							  parked.get(1) / 1e9, parked.get(2) / 1e9);
					System.out.flush();
				}
			} catch (java.io.IOException e) {
			}
		}, "marks");
		marks.setDaemon(true);
		marks.start();
		Runnable parker = () -> {
			while (System.currentTimeMillis() < end) {
				long t0 = System.nanoTime();
				parkSix();
				long t1 = System.nanoTime();
				parkThree();
				long t2 = System.nanoTime();
				parkOne();
				long t3 = System.nanoTime();
				parked.addAndGet(0, t1 - t0);
				parked.addAndGet(1, t2 - t1);
				parked.addAndGet(2, t3 - t2);
			}
		};
		Thread other = new Thread(parker, "park-1");
		Thread.currentThread().setName("park-0");
		other.start();
		parker.run();
		other.join();
	}

	static long stack(int d, long end) {
		if (d > 1)
			return stack(d - 1, end) + 1;
		long s = 0;
		while (System.currentTimeMillis() < end)
			s += spin(10000);
		return s;
	}

	public static void main(String[] args) throws Exception {
		long end = System.currentTimeMillis() + 1000L * Long.parseLong(args.length > 0 ? args[0] : "10");
		if (args.length > 1 && args[1].equals("park")) {
			park(end);
			return;
		}
		if (args.length > 1 && args[1].equals("stack")) {
			// Below main (and the launcher's frames): DEPTH - 1 stack()
			// frames and spin, whose loop C2 compiles in place (OSR) or
			// inlines; main's interpreted frame roots them.
			sink = stack(args.length > 2 ? Integer.parseInt(args[2]) - 1 : 49, end);
			return;
		}
		// The CPU time each of six, three and one took, as the threads saw
		// it (their own CPU clocks: wall time counts a preempted thread's
		// waits): C2 compiles each caller's inlined copy of the loop apart,
		// and they need not run at one speed. A line a second, "split MS
		// SIX THREE ONE" (the wall-clock ms at its end, ns of each over
		// that second): the test compares the profile with the seconds it
		// recorded.
		java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
		java.util.concurrent.atomic.AtomicLongArray took = new java.util.concurrent.atomic.AtomicLongArray(3);
		Runnable split = () -> {
			long s = 0, next = System.currentTimeMillis() + 1000;
			while (System.currentTimeMillis() < end) {
				long a = cpu.getCurrentThreadCpuTime();
				s += six();
				long b = cpu.getCurrentThreadCpuTime();
				s += three();
				long c = cpu.getCurrentThreadCpuTime();
				s += one();
				long d = cpu.getCurrentThreadCpuTime();
				took.addAndGet(0, b - a);
				took.addAndGet(1, c - b);
				took.addAndGet(2, d - c);
				if (Thread.currentThread().getName().equals("split-0") &&
				    System.currentTimeMillis() >= next) {
					next += 1000;
					System.out.println("split " + System.currentTimeMillis() + " " +
							   took.getAndSet(0, 0) + " " + took.getAndSet(1, 0) + " " +
							   took.getAndSet(2, 0));
					System.out.flush();
				}
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
