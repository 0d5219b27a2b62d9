/* bpf/runtime/python.bpf.c, the Python frame walk in BPF, on the real
 * interpreters: pyenv's 3.8-3.13 and Debian's /usr/bin/python3.11 each run
 * tests/workloads/pyspin.py (two threads spinning in Python, each loop on
 * one line), sampled at 499 Hz on every CPU until 100 samples (0.2 s on an
 * idle machine), at most 10 s (PY_BPF_SECONDS). Every sample of the
 * process must carry the stack its thread is in, named by user/runtime/python.c
 * from the code objects and offsets BPF read: the main thread <module> ->
 * top -> mid -> leaf at the LINE: markers, exactly; the other thread its
 * target at its loop's line, under threading's frames. Root (BPF). */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "check.h"
#include "python_test.skel.h"
#include "testutil.h"
#include "user/runtime/python.h"
#include "user/util.h"

static char script[4096];
static double seconds = 10;

static int marker(const char *tag)
{
	return line_marker(script, tag);
}

struct run {
	struct py_proc *p;
	pid_t pid;
	bool qual;
	int main_ok, thread_ok, bad, total;
	char first_bad[1024];
};

static void name_of(struct run *r, const struct py_frame *f, char *buf, size_t len, int *line)
{
	const struct py_code *c;

	*line = -1;
	if (py_code_get(r->p, f->code, &c)) {
		snprintf(buf, len, "?");
		return;
	}
	py_code_line(r->p, c, f->lasti, line);
	snprintf(buf, len, "%s", c->name);
}

static int on_stack(void *ctx, void *data, size_t len)
{
	struct run *r = ctx;
	const struct py_bpf_stack *s = data;
	char names[4][128] = {{0}};
	int lines[4] = {0}, n = 0;
	bool ok;

	if (len < sizeof(*s) || s->tgid != (__u32)r->pid)
		return 0;
	r->total++;
	for (unsigned i = 0; i < s->nframes && i < PY_BPF_FRAMES; i++) {
		const struct py_bpf_frame *b = &s->frames[i];
		struct py_frame f;

		if (py_frame_decode(r->p, PY_FRAME_CODE(b->code), b->lasti, PY_FRAME_OWNER(b->code),
				    &f))
			continue;
		if (n < 4)
			name_of(r, &f, names[n], sizeof(names[n]), &lines[n]);
		n++;
	}
	if (s->tid == (__u32)r->pid) {
		ok = n == 4 && !s->truncated && !strcmp(names[0], "leaf") &&
		     lines[0] == marker("spin") && !strcmp(names[1], "mid") &&
		     lines[1] == marker("mid") && !strcmp(names[2], "top") &&
		     lines[2] == marker("top") && !strcmp(names[3], "<module>") &&
		     lines[3] == marker("module");
		r->main_ok += ok;
	} else {
		ok = n == 4 && !s->truncated && !strcmp(names[0], "thread_leaf") &&
		     lines[0] == marker("tspin") &&
		     !strcmp(names[1], r->qual ? "Thread.run" : "run") &&
		     !strcmp(names[3], r->qual ? "Thread._bootstrap" : "_bootstrap");
		r->thread_ok += ok;
	}
	if (!ok && !r->bad++)
		snprintf(r->first_bad, sizeof(r->first_bad),
			 "tid %u: %d frames%s: %s:%d %s:%d %s:%d %s:%d", s->tid, n,
			 s->truncated ? " (truncated)" : "", names[0], lines[0], names[1], lines[1],
			 names[2], lines[2], names[3], lines[3]);
	return 0;
}

static void check_one(struct python_test *skel, struct python *py, const char *exe, int minor)
{
	char *argv[] = {(char *)exe, "-S", script, NULL}, line[64];
	struct ring_buffer *rb = NULL;
	struct run r = {.qual = minor >= 11};
	struct py_bpf_proc val;
	__u64 stats[PY_STAT_NR] = {0};
	int ncpu = libbpf_num_possible_cpus(), o[2];
	struct bpf_link *links[256] = {0};
	int fds[256];
	FILE *out;
	__u32 key;

	if (pipe(o))
		return;
	r.pid = fork();
	if (r.pid == 0) {
		dup2(o[1], 1);
		execv(exe, argv);
		_exit(127);
	}
	close(o[1]);
	out = fdopen(o[0], "r");
	/* "ready" within a minute (an emulated guest reads the interpreter
	 * over 9p): a hang is a failure, not a test that never ends. */
	if (!out || poll(&(struct pollfd){.fd = o[0], .events = POLLIN}, 1, 60000) != 1 ||
	    !fgets(line, sizeof(line), out)) {
		CHECKF(0, "%s did not start", exe);
		goto out;
	}
	if (python_attach(py, r.pid, &r.p)) {
		CHECKF(0, "%s: not attached", exe);
		goto out;
	}
	py_proc_bpf(r.p, &val);
	key = (__u32)r.pid;
	CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.py_procs), &key, &val, BPF_ANY));
	for (key = 0; key < PY_STAT_NR; key++) { /* per-CPU zeros */
		__u64 zero[256] = {0};

		bpf_map_update_elem(bpf_map__fd(skel->maps.py_stats), &key, zero, BPF_ANY);
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.py_stacks), on_stack, &r, NULL);
	for (int cpu = 0; cpu < ncpu && cpu < 256; cpu++) {
		struct perf_event_attr a = {
		    .type = PERF_TYPE_SOFTWARE,
		    .config = PERF_COUNT_SW_CPU_CLOCK,
		    .size = sizeof(a),
		    .freq = 1,
		    .sample_freq = 499,
		};

		fds[cpu] = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		links[cpu] = fds[cpu] < 0
				 ? NULL
				 : bpf_program__attach_perf_event(skel->progs.py_walk, fds[cpu]);
		CHECKF(links[cpu], "cpu %d: %s", cpu, strerror(errno));
	}
	/* Until 100 samples with 30 of each thread, or the time is up: on a
	 * loaded machine the interpreter gets the CPU less often. */
	for (uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	     rb && now_ns(CLOCK_MONOTONIC) < end &&
	     !(r.total >= 100 && r.main_ok >= 30 && r.thread_ok >= 30);)
		ring_buffer__poll(rb, 50);
	for (int cpu = 0; cpu < ncpu && cpu < 256; cpu++) {
		bpf_link__destroy(links[cpu]);
		if (fds[cpu] >= 0)
			close(fds[cpu]);
	}
	if (rb)
		ring_buffer__consume(rb);
	for (key = 0; key < PY_STAT_NR; key++) {
		__u64 v[256] = {0};

		if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.py_stats), &key, v))
			for (int c = 0; c < ncpu && c < 256; c++)
				stats[key] += v[c];
	}
	/* Every sample a stack, every stack the thread's own. */
	CHECKF(r.total >= 100 && r.main_ok >= 30 && r.thread_ok >= 30 && r.bad == 0 &&
		   r.main_ok > 0 && r.thread_ok > 0,
	       "%s: %d samples, main %d, thread %d, %d wrong (first: %s)", exe, r.total, r.main_ok,
	       r.thread_ok, r.bad, r.first_bad);
	CHECKF(!stats[PY_STAT_NO_TSTATE] && !stats[PY_STAT_FAULT] && !stats[PY_STAT_LOST],
	       "%s: no thread state %llu, fault %llu, lost %llu", exe,
	       (unsigned long long)stats[PY_STAT_NO_TSTATE],
	       (unsigned long long)stats[PY_STAT_FAULT], (unsigned long long)stats[PY_STAT_LOST]);
	printf("  %s: %d samples walked in BPF (main thread %d, other %d), %d wrong\n", exe,
	       r.total, r.main_ok, r.thread_ok, r.bad);
	key = (__u32)r.pid;
	bpf_map_delete_elem(bpf_map__fd(skel->maps.py_procs), &key);
	python_forget(py, r.pid);
out:
	ring_buffer__free(rb);
	kill(r.pid, SIGKILL);
	waitpid(r.pid, NULL, 0);
	if (out)
		fclose(out);
}

static void test_walk(void)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	struct python_test *skel = python_test__open();
	struct python *py = NULL;
	char exe[512];

	/* Two slots a CPU, as the recorder sizes them (user/record.c). */
	if (skel &&
	    (bpf_map__set_max_entries(skel->maps.py_scratch, 2 * libbpf_num_possible_cpus()) ||
	     python_test__load(skel))) {
		python_test__destroy(skel);
		skel = NULL;
	}

	/* Said at once: on an emulated 5.10 the test has been seen to give
	 * nothing for minutes, and where it stood was not known. */
	printf("  the walk %s in %.1f s\n", skel ? "loaded" : "did not load",
	       (now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	CHECKF(skel, "load: %s", strerror(errno));
	if (!skel || python_new(&py))
		return;
	for (int minor = 8; minor <= 13; minor++) {
		if (!pyenv_python(minor, exe, sizeof(exe))) {
			CHECKF(0, "no pyenv CPython 3.%d", minor);
			continue;
		}
		check_one(skel, py, exe, minor);
	}
	check_one(skel, py, "/usr/bin/python3.11", 11);
	python_free(py);
	python_test__destroy(skel);
}

int main(void)
{
	char cwd[2048];

	if (!getcwd(cwd, sizeof(cwd)))
		return 1;
	snprintf(script, sizeof(script), "%s/tests/workloads/pyspin.py", cwd);
	if (getenv("PY_BPF_SECONDS"))
		seconds = atof(getenv("PY_BPF_SECONDS"));
	if (geteuid() != 0) {
		SKIP_TEST(test_walk, "needs root (BPF)");
		return 0;
	}
	msg_set_verbosity(-1);
	setvbuf(stdout, NULL, _IOLBF, 0); /* each interpreter's line as it ends */
	RUN_TEST(test_walk);
	CHECK_EXIT();
}
