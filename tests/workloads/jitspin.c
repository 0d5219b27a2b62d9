/* A stand-in for a JIT runtime, for the hostile-input tests: runs a spin
 * loop from an anonymous executable mapping (code that only a perf map can
 * name), after printing its address so the test can write that map.
 * argv[1], when given, becomes the process's comm (prctl PR_SET_NAME), so a
 * test can give it bytes that are not text. Runs until killed, or with
 * JITSPIN_SECONDS=N for N seconds: then, with JITSPIN_EXIT_MAP=PATH, it
 * renames PATH (a file or a symlink the test made) to /tmp/perf-PID.map
 * as it exits, as a runtime that writes its map at exit does (Java's
 * -XX:+DumpPerfMapAtExit). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static const char *exit_map;
static char map_path[64];

static void on_alarm(int sig)
{
	struct timespec ts = {0, 100 * 1000 * 1000};
	int i;

	(void)sig;
	/* A test that was slow to write PATH: up to 5 s more for it (the
	 * runtime stood for always has its map at exit). rename, nanosleep
	 * and _exit are async-signal-safe. */
	for (i = 0; exit_map && i < 50; i++) {
		if (!rename(exit_map, map_path) || access(exit_map, F_OK) == 0)
			break;
		nanosleep(&ts, NULL);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	static const unsigned char spin[] = {0xeb, 0xfe}; /* jmp . */
	void (*code)(void);
	void *p;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(p, spin, sizeof(spin));
	if (argc > 1 && prctl(PR_SET_NAME, argv[1], 0, 0, 0)) {
		perror("prctl");
		return 1;
	}
	printf("%lx\n", (unsigned long)p);
	fflush(stdout);
	if (getenv("JITSPIN_SECONDS")) {
		exit_map = getenv("JITSPIN_EXIT_MAP");
		snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
		signal(SIGALRM, on_alarm);
		alarm(atoi(getenv("JITSPIN_SECONDS")));
	}
	code = (void (*)(void))p;
	code();
	return 0;
}
