/* bpf/runtime/python.bpf.c, the Python frame walk in BPF, on the real
 * interpreters: pyenv's 3.8-3.13 and Debian's /usr/bin/python3.11 each run
 * tests/workloads/pyspin.py (two threads spinning in Python, each loop on
 * one line), sampled at 499 Hz on every CPU until 100 samples (0.2 s on an
 * idle machine), at most 10 s (PY_BPF_SECONDS). Every sample of the
 * process must carry the stack its thread is in, named by user/runtime/python.c
 * from the code objects and offsets BPF read: the main thread <module> ->
 * top -> mid -> leaf at the LINE: markers, exactly; the other thread its
 * target at its loop's line, under threading's frames. And on frames this
 * test lays out in its own memory as 3.12's are at an evaluation call's
 * first instructions (test_stale_cframe). Root (BPF). */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
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

/* The walk at 499 Hz on every CPU, of thread tid (-1: every thread). */
static void sample_on(struct python_test *skel, int tid, int fds[256], struct bpf_link *links[256])
{
	for (int cpu = 0; cpu < libbpf_num_possible_cpus() && cpu < 256; cpu++) {
		struct perf_event_attr a = {
		    .type = PERF_TYPE_SOFTWARE,
		    .config = PERF_COUNT_SW_CPU_CLOCK,
		    .size = sizeof(a),
		    .freq = 1,
		    .sample_freq = 499,
		};

		fds[cpu] =
		    (int)syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		links[cpu] = fds[cpu] < 0
				 ? NULL
				 : bpf_program__attach_perf_event(skel->progs.py_walk, fds[cpu]);
		CHECKF(links[cpu], "cpu %d: %s", cpu, strerror(errno));
	}
}

static void sample_off(int fds[256], struct bpf_link *links[256])
{
	for (int cpu = 0; cpu < libbpf_num_possible_cpus() && cpu < 256; cpu++) {
		bpf_link__destroy(links[cpu]);
		if (fds[cpu] >= 0)
			close(fds[cpu]);
	}
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
	sample_on(skel, -1, fds, links);
	/* Until 100 samples with 30 of each thread, or the time is up: on a
	 * loaded machine the interpreter gets the CPU less often. */
	for (uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	     rb && now_ns(CLOCK_MONOTONIC) < end &&
	     !(r.total >= 100 && r.main_ok >= 30 && r.thread_ok >= 30);)
		ring_buffer__poll(rb, 50);
	sample_off(fds, links);
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

/* 3.12's evaluation call, sampled between setting tstate->cframe to its
 * own cframe and filling that cframe in (Python/ceval.c, both fields in
 * one store 118 bytes of code later in pyenv's 3.12.1): the cframe's
 * current frame is the last call's at the same depth, its shim (S), whose
 * previous is the frame that call's caller ran (X). Here the new call's
 * own frame was pushed on the data stack where X was, its previous not
 * set yet: still S, the last time that slot was linked. S -> X -> S ... a
 * cycle, which the walk followed to its max (1 sample in ~5,000 of
 * json.tool's under -X perf). The previous cframe's current frame (P, the
 * caller's, then its shim R) is the stack; the walk must give exactly
 * that. The layout is this test's own: a frame is code, previous, lasti,
 * owner; a cframe is current frame, previous. */
struct fake_frame {
	uint64_t code, previous, lasti;
	uint8_t owner, pad[7];
};

static _Atomic int stale_tid, stale_stop;

static void *stale_spin(void *arg)
{
	(void)arg;
	stale_tid = (int)syscall(SYS_gettid);
	while (!stale_stop)
		;
	return NULL;
}

struct stale_run {
	int total, right, cycle;
	unsigned first_n;
	uint64_t want[2];
};

static int on_stale(void *ctx, void *data, size_t len)
{
	struct stale_run *r = ctx;
	const struct py_bpf_stack *s = data;

	if (len < sizeof(*s) || s->tid != (__u32)stale_tid)
		return 0;
	if (!r->total++)
		r->first_n = s->nframes;
	r->right += s->nframes == 2 && !s->truncated &&
		    PY_FRAME_CODE(s->frames[0].code) == r->want[0] &&
		    PY_FRAME_CODE(s->frames[1].code) == r->want[1];
	r->cycle += s->nframes > 2;
	return 0;
}

static void test_stale_cframe(void)
{
	static uint64_t code[3][8], runtime[1], interp[1], tstate[3], cf_new[2], cf_old[2];
	static struct fake_frame S, X, P, R;
	struct python_test *skel = python_test__open();
	struct py_bpf_proc val;
	struct py_layout *l = &val.layout;
	struct stale_run r = {.want = {(uint64_t)code[1], (uint64_t)code[0]}};
	struct ring_buffer *rb = NULL;
	int ncpu = libbpf_num_possible_cpus(), fds[256];
	struct bpf_link *links[256] = {0};
	pthread_t th;
	__u32 key;

	if (skel && (bpf_map__set_max_entries(skel->maps.py_scratch, 2 * ncpu) ||
		     python_test__load(skel))) {
		python_test__destroy(skel);
		skel = NULL;
	}
	CHECKF(skel, "load: %s", strerror(errno));
	if (!skel || pthread_create(&th, NULL, stale_spin, NULL))
		goto out;
	while (!stale_tid)
		;
	memset(&val, 0xff, sizeof(val)); /* every offset PY_OFF_NONE */
	l->version = 3 << 8 | 12;
	l->owner_cstack = 3; /* FRAME_OWNED_BY_CSTACK */
	l->runtime_interp_head = 0;
	l->interp_tstate_head = 0;
	l->tstate_next = 0;
	l->tstate_native_thread_id = 8;
	l->tstate_frame = 16; /* 3.12: tstate->cframe */
	l->cframe_current_frame = 0;
	l->frame_code = offsetof(struct fake_frame, code);
	l->frame_back = offsetof(struct fake_frame, previous);
	l->frame_lasti = offsetof(struct fake_frame, lasti);
	l->frame_owner = offsetof(struct fake_frame, owner);
	l->code_filename = 0;
	l->unicode_ascii = 0;
	runtime[0] = (uint64_t)interp;
	interp[0] = (uint64_t)tstate;
	tstate[0] = 0;
	tstate[1] = (uint64_t)stale_tid;
	tstate[2] = (uint64_t)cf_new;
	cf_new[0] = (uint64_t)&S, cf_new[1] = (uint64_t)cf_old;
	cf_old[0] = (uint64_t)&P, cf_old[1] = 0;
	S = (struct fake_frame){.code = (uint64_t)code[0], .previous = (uint64_t)&X, .owner = 3};
	X = (struct fake_frame){.code = (uint64_t)code[2], .previous = (uint64_t)&S};
	P = (struct fake_frame){.code = (uint64_t)code[1], .previous = (uint64_t)&R};
	R = (struct fake_frame){.code = (uint64_t)code[0], .owner = 3};
	val.runtime = (uint64_t)runtime;
	key = (__u32)getpid();
	CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.py_procs), &key, &val, BPF_ANY));
	rb = ring_buffer__new(bpf_map__fd(skel->maps.py_stacks), on_stale, &r, NULL);
	sample_on(skel, stale_tid, fds, links);
	for (uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	     rb && now_ns(CLOCK_MONOTONIC) < end && r.total < 20;)
		ring_buffer__poll(rb, 50);
	sample_off(fds, links);
	if (rb)
		ring_buffer__consume(rb);
	stale_stop = 1;
	pthread_join(th, NULL);
	CHECKF(r.total >= 20 && r.right == r.total,
	       "%d samples, %d of them the previous cframe's 2 frames, %d with more (the stale "
	       "cycle; the first: %u frames)",
	       r.total, r.right, r.cycle, r.first_n);
	printf("  a stale cframe: %d samples, %d walked from the previous cframe\n", r.total,
	       r.right);
out:
	ring_buffer__free(rb);
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
		SKIP_TEST(test_stale_cframe, "needs root (BPF)");
		return 0;
	}
	msg_set_verbosity(-1);
	setvbuf(stdout, NULL, _IOLBF, 0); /* each interpreter's line as it ends */
	RUN_TEST(test_stale_cframe);
	RUN_TEST(test_walk);
	CHECK_EXIT();
}
