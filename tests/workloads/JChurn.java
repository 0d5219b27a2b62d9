// A Java workload whose classes are unloaded and whose code is freed and
// recompiled while it is sampled, for the HotSpot walk's hostile test
// (tests/integration/test_jvm.sh's jvm_churn): two classes both named
// Worker (tests/workloads/jchurn/A and B, compiled by the test), loaded in
// turn by a class loader of their own, run until compiled, dropped and
// collected (class unloading: their Methods, nmethods and metadata freed,
// their memory taken by the other's). A's run() calls evenSpin, B's
// oddSpin: a frame named after the object at its address when the drain
// read it, not the one sampled, shows as one's method at the other's line.
// Usage: java JChurn SECONDS DIR_A DIR_B
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Paths;

public class JChurn {
	public static void main(String[] a) throws Exception {
		long end = System.currentTimeMillis() + 1000L * Long.parseLong(a[0]);
		URL[][] dirs = {{Paths.get(a[1]).toUri().toURL()}, {Paths.get(a[2]).toUri().toURL()}};
		for (int i = 0; System.currentTimeMillis() < end; i++) {
			URLClassLoader l = new URLClassLoader(dirs[i & 1], null);
			Runnable w = (Runnable) l.loadClass("Worker").getDeclaredConstructor().newInstance();
			for (int k = 0; k < 40; k++)
				w.run();
			w = null;
			l.close();
			l = null;
			if ((i & 3) == 3)
				System.gc(); // the dropped loaders' classes unloaded
		}
	}
}
