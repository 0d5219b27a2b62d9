// test_jvm.sh's jvm_jfr workload: javac compiling the same sources again
// and again in one JVM, with javac's own account of where its thread's CPU
// time went, the answer the profiles are held to. A TaskListener (javac's
// plug-in interface) times each parse, analysis (attribution and flow) and
// code generation by the thread's CPU clock (ThreadMXBean), and after each
// compilation (~60 ms; the profiles' window is cut to these lines) prints
// the running totals:
//   phases MS total NS PARSE NS ENTER NS ANALYZE NS GENERATE NS ...
// (MS: wall-clock milliseconds; ENTER's events overlap, one per file: not
// a time). Usage: java JavacPhases SECONDS OUTDIR SOURCES...
import com.sun.source.util.JavacTask;
import com.sun.source.util.TaskEvent;
import com.sun.source.util.TaskListener;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

public class JavacPhases {
	static final ThreadMXBean T = ManagementFactory.getThreadMXBean();
	static final int KINDS = TaskEvent.Kind.values().length;
	static final long[] cpu = new long[KINDS], start = new long[KINDS];

	public static void main(String[] a) throws Exception {
		long end = System.currentTimeMillis() + 1000L * Long.parseLong(a[0]);
		JavaCompiler jc = ToolProvider.getSystemJavaCompiler();
		List<File> files = new ArrayList<>();
		for (int i = 2; i < a.length; i++)
			files.add(new File(a[i]));
		long t0 = T.getCurrentThreadCpuTime();
		TaskListener timer = new TaskListener() {
			public void started(TaskEvent e) {
				start[e.getKind().ordinal()] = T.getCurrentThreadCpuTime();
			}
			public void finished(TaskEvent e) {
				int k = e.getKind().ordinal();
				cpu[k] += T.getCurrentThreadCpuTime() - start[k];
			}
		};
		while (System.currentTimeMillis() < end) {
			StandardJavaFileManager fm = jc.getStandardFileManager(null, null, null);
			JavacTask t = (JavacTask) jc.getTask(null, fm, null, Arrays.asList("-d", a[1]), null,
							     fm.getJavaFileObjectsFromFiles(files));
			t.addTaskListener(timer);
			t.call();
			StringBuilder sb = new StringBuilder("phases " + System.currentTimeMillis() + " total " +
							     (T.getCurrentThreadCpuTime() - t0));
			for (TaskEvent.Kind k : TaskEvent.Kind.values())
				sb.append(" " + k + " " + cpu[k.ordinal()]);
			System.out.println(sb);
			System.out.flush();
		}
	}
}
