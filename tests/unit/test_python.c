/* user/runtime/python.c on the real interpreters: every CPython of pyenv 3.8-3.13
 * (shared libpython) and Debian's /usr/bin/python3.11 (static) runs
 * tests/workloads/pywait.py, blocked three calls deep on one thread and in
 * its target on another; the walk from _PyRuntime must name every frame of
 * the main thread exactly (function, qualified on 3.11 on, file, line, and
 * nothing more) and the other thread's target. Lines come from the
 * script's LINE: markers. Then code objects freed and reallocated at the
 * same address, and programs that only look like CPython. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "formats/pyline.h"
#include "testutil.h"
#include "user/runtime/python.h"
#include "user/runtime/python_layouts.h"
#include "user/util.h"

static char script[4096];
static const char *build;

struct child {
	pid_t pid;
	FILE *out; /* its stdout */
	int in;	   /* its stdin */
};

static int spawn(struct child *c, char *const argv[])
{
	int o[2], i[2];

	if (pipe2(o, O_CLOEXEC) || pipe2(i, O_CLOEXEC))
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		dup2(o[1], 1);
		dup2(i[0], 0);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	close(i[0]);
	c->out = fdopen(o[0], "r");
	c->in = i[1];
	return c->pid > 0 && c->out ? 0 : -1;
}

static void reap(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	fclose(c->out);
	close(c->in);
}

static int marker(const char *tag)
{
	return line_marker(script, tag);
}

struct named {
	char name[128], file[512];
	int line;
};
struct seen {
	struct py_proc *p;
	int nthreads;
	struct named main[8], other[8];
	int nmain, nother; /* frames; -1: a frame not readable */
	uint64_t main_tid;
};

static int on_thread(const struct py_thread *t, void *ctx)
{
	struct seen *s = ctx;
	struct named *out;
	int *n;

	s->nthreads++;
	/* The main thread is the one in <module> at the bottom. */
	if (t->nframes == 0)
		return 0;
	{
		const struct py_code *c;

		if (py_code_get(s->p, t->frames[t->nframes - 1].code, &c) == 0 &&
		    !strcmp(c->name, "<module>")) {
			out = s->main;
			n = &s->nmain;
			s->main_tid = t->tid;
		} else {
			out = s->other;
			n = &s->nother;
		}
	}
	*n = 0;
	for (int i = 0; i < t->nframes && i < 8; i++) {
		const struct py_code *c;
		int line = -1;

		if (py_code_get(s->p, t->frames[i].code, &c)) {
			*n = -1;
			return 0;
		}
		py_code_line(s->p, c, t->frames[i].lasti, &line);
		snprintf(out[i].name, sizeof(out[i].name), "%s", c->name);
		snprintf(out[i].file, sizeof(out[i].file), "%s", c->file);
		out[i].line = line;
		*n = i + 1;
	}
	if (t->truncated)
		*n = -1;
	return 0;
}

static bool frames_match(const struct seen *s, bool qual, char *why, size_t len)
{
	const char *names[] = {qual ? "Waiter.wait" : "wait", "middle", "outer", "<module>"};
	const char *tags[] = {"wait", "middle", "outer", "module"};

	if (s->nmain != 4) {
		snprintf(why, len, "main thread: %d frames", s->nmain);
		return false;
	}
	for (int i = 0; i < 4; i++)
		if (strcmp(s->main[i].name, names[i]) || strcmp(s->main[i].file, script) ||
		    s->main[i].line != marker(tags[i])) {
			snprintf(why, len, "frame %d: %s %.300s:%d, want %s %.300s:%d", i,
				 s->main[i].name, s->main[i].file, s->main[i].line, names[i],
				 script, marker(tags[i]));
			return false;
		}
	if (s->nother < 2 || strcmp(s->other[0].name, "helper_target") ||
	    strcmp(s->other[0].file, script) || s->other[0].line != marker("thread") ||
	    strcmp(s->other[1].name, qual ? "Thread.run" : "run") ||
	    !strstr(s->other[1].file, "threading.py")) {
		snprintf(
		    why, len, "thread: %d frames, %s %.300s:%d then %s", s->nother,
		    s->nother > 0 ? s->other[0].name : "-", s->nother > 0 ? s->other[0].file : "-",
		    s->nother > 0 ? s->other[0].line : 0, s->nother > 1 ? s->other[1].name : "-");
		return false;
	}
	return true;
}

/* One interpreter: attach, walk until both threads are blocked where the
 * script says (they get there within moments of "ready"), check. */
static void check_interpreter(struct python *py, const char *exe, int minor, bool shared)
{
	char *argv[] = {(char *)exe, "-S", script, NULL}, line[128], why[1024] = "";
	struct child c;
	struct py_proc *p = NULL;
	struct seen s;
	int ret = -1;
	bool ok = false;

	if (spawn(&c, argv) || !fgets(line, sizeof(line), c.out) || strncmp(line, "ready", 5)) {
		CHECKF(0, "%s: did not start", exe);
		return;
	}
	ret = python_attach(py, c.pid, &p);
	CHECKF(!ret, "%s: python_attach %d", exe, ret);
	if (!ret) {
		const struct py_binary *b = py_proc_binary(p);

		CHECKF(b->major == 3 && b->minor == minor && b->has_layout, "%s: %d.%d", exe,
		       b->major, b->minor);
		char *micro = run_cmd("%s -S -c 'import sys; print(sys.version_info[2])'", exe);

		/* The micro version too, read from the binary (Py_Version, or
		 * PY_VERSION in .rodata), as the interpreter says it. */
		CHECKF(micro && b->micro == atoi(micro), "%s: micro %d, the interpreter says %s",
		       exe, b->micro, micro ? micro : "?");
		free(micro);
		for (int tries = 0; tries < 100 && !ok; tries++) {
			memset(&s, 0, sizeof(s));
			s.p = p;
			ret = python_walk(p, on_thread, &s);
			ok = !ret && s.nthreads == 2 &&
			     frames_match(&s, minor >= 11, why, sizeof(why));
			if (!ok)
				nanosleep(&(struct timespec){0, 20000000}, NULL);
		}
		CHECKF(ok, "%s (%s): walk %d, %d threads: %s", exe, shared ? "libpython" : "static",
		       ret, s.nthreads, why);
		/* 3.11 on, the thread's own kernel id. */
		if (minor >= 11)
			CHECKF(s.main_tid == (uint64_t)c.pid, "%s: main tid %llu, pid %d", exe,
			       (unsigned long long)s.main_tid, (int)c.pid);
		python_forget(py, c.pid);
	}
	reap(&c);
}

static void test_interpreters(void)
{
	struct python *py;
	char exe[512];

	CHECK(!python_new(&py));
	for (int minor = 8; minor <= 13; minor++) {
		if (!pyenv_python(minor, exe, sizeof(exe))) {
			CHECKF(0, "no pyenv CPython 3.%d", minor);
			continue;
		}
		check_interpreter(py, exe, minor, true);
	}
	CHECKF(!access("/usr/bin/python3.11", X_OK), "no /usr/bin/python3.11");
	check_interpreter(py, "/usr/bin/python3.11", 11, false);
	python_free(py);
}

/* Code objects dropped and allocated again at the same address: each
 * lookup names the object there now. */
static void reuse_one(struct python *py, const char *exe)
{
	char *argv[] = {(char *)exe, "-S", script, "reuse", NULL}, line[256], file[128];
	unsigned long long addr, prev = 0;
	struct child c;
	struct py_proc *p = NULL;
	int reused = 0, right = 0, n = 0;

	if (spawn(&c, argv)) {
		CHECK(0);
		return;
	}
	while (fgets(line, sizeof(line), c.out) && sscanf(line, "%llu %127s", &addr, file) == 2) {
		const struct py_code *co;

		if (!p && python_attach(py, c.pid, &p))
			break;
		n++;
		reused += addr == prev;
		if (!py_code_get(p, addr, &co) && !strcmp(co->file, file) &&
		    !strcmp(co->name, "<module>") && co->firstlineno == 1)
			right++;
		else
			CHECKF(0, "%s: code at %#llx: want %s", exe, addr, file);
		prev = addr;
		if (write(c.in, "\n", 1) != 1)
			break;
	}
	CHECKF(n == 40 && right == n, "%s: %d of %d named right", exe, right, n);
	/* Else the test shows nothing: CPython's allocator reuses at once. */
	CHECKF(reused >= 5, "%s: only %d addresses reused", exe, reused);
	if (p)
		python_forget(py, c.pid);
	reap(&c);
}

static void test_reuse(void)
{
	struct python *py;
	char exe[512];

	CHECK(!python_new(&py));
	if (pyenv_python(9, exe, sizeof(exe)))
		reuse_one(py, exe);
	if (pyenv_python(12, exe, sizeof(exe)))
		reuse_one(py, exe);
	reuse_one(py, "/usr/bin/python3.11");
	python_free(py);
}

/* Programs exporting _PyRuntime that are not CPython: an error or a walk
 * that stops, never a crash, a hang or a name. */
static void fake_one(const char *name, int want_attach)
{
	char exe[512], line[64], *argv[] = {exe, NULL};
	struct python *py;
	struct py_proc *p = NULL;
	struct child c;
	int ret;

	snprintf(exe, sizeof(exe), "%s/tests/%s", build, name);
	CHECK(!python_new(&py));
	if (spawn(&c, argv) || !fgets(line, sizeof(line), c.out)) {
		CHECKF(0, "%s did not start", exe);
		python_free(py);
		return;
	}
	ret = python_attach(py, c.pid, &p);
	CHECKF(ret == want_attach, "%s: attach %d, want %d", name, ret, want_attach);
	if (!ret) {
		struct seen s = {.p = p};
		const struct py_code *co;

		ret = python_walk(p, on_thread, &s);
		/* Every chain loops back into _PyRuntime: cut at once, and
		 * no object there is a code object. */
		CHECKF(ret == -EINVAL && s.nthreads == 1 && s.nmain <= 0 && s.nother <= 0,
		       "%s: walk %d, %d threads, %d/%d named", name, ret, s.nthreads, s.nmain,
		       s.nother);
		CHECK(py_code_get(p, 1, &co) == -EFAULT);
		CHECK(py_code_get(p, 0, &co) == -EFAULT);
	}
	reap(&c);
	python_free(py);
}

static void test_fakes(void)
{
	fake_one("fake_python_311", 0);	       /* says 3.11: walked, to no name */
	fake_one("fake_python_313", -EINVAL);  /* says 3.13, no _Py_DebugOffsets */
	fake_one("fake_python_399", -ENOTSUP); /* a version with no layout */
	fake_one("fake_python_37", -ENOTSUP);  /* no version: 3.7 or older */
}

/* Debian's python3.11: the version from Py_Version in the executable. */
static void test_binaries(void)
{
	struct py_binary b;
	char exe[512];
	int fd = open("/usr/bin/python3.11", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0 && !py_binary_read(fd, "python3.11", &b));
	CHECK(b.major == 3 && b.minor == 11 && b.micro >= 0 && b.has_layout &&
	      b.layout.version == 0x30b);
	if (fd >= 0)
		close(fd);
	/* Not a CPython: a binary with no _PyRuntime, a text file. */
	fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
	CHECK(py_binary_read(fd, "true", &b) == -ENOENT);
	close(fd);
	fd = open(script, O_RDONLY | O_CLOEXEC);
	CHECK(py_binary_read(fd, "pywait.py", &b) == -ENOENT);
	close(fd);
	/* 3.13: the _Py_DebugOffsets equal the offsets of its headers. */
	CHECK(pyenv_python(13, exe, sizeof(exe)));
	if (pyenv_python(13, exe, sizeof(exe))) {
		char lib[600];

		snprintf(lib, sizeof(lib), "%.*s/lib/libpython3.13.so.1.0",
			 (int)(strstr(exe, "/bin/") - exe), exe);
		fd = open(lib, O_RDONLY | O_CLOEXEC);
		CHECKF(fd >= 0 && !py_binary_read(fd, lib, &b), "%s", lib);
		CHECK(b.layout.version == 0x30d && py_layouts[5].version == 0x30d &&
		      !memcmp(&b.layout, &py_layouts[5], sizeof(b.layout)));
		if (fd >= 0)
			close(fd);
	}
}

int main(void)
{
	char cwd[2048];

	build = getenv("BPFTRACE_REC_BUILD");
	if (!build)
		build = "build";
	if (!getcwd(cwd, sizeof(cwd)))
		return 1;
	snprintf(script, sizeof(script), "%s/tests/workloads/pywait.py", cwd);
	if (geteuid() != 0) { /* process_vm_readv of other users' processes */
		SKIP_TEST(test_python, "needs root");
		return 0;
	}
	msg_set_verbosity(-1);
	RUN_TEST(test_binaries);
	RUN_TEST(test_interpreters);
	RUN_TEST(test_reuse);
	RUN_TEST(test_fakes);
	CHECK_EXIT();
}
