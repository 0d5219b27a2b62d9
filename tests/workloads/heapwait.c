/* A preloaded library (test_heap.sh's heap_vs_heaptrack_sort) that holds a
 * program before its main, so that a recorder attaches with -p before the
 * program's first allocation: in the process whose executable's name is
 * $HEAPWAIT_EXE (not the shell or the tools around it that inherit the
 * same LD_PRELOAD), its constructor says "heapwait: pid N" and waits for
 * SIGUSR1. */
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void heapwait(void)
{
	const char *want = getenv("HEAPWAIT_EXE");
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	sigset_t s, old;
	int sig;

	if (!want || n <= 0)
		return;
	exe[n] = 0;
	if (strcmp(basename(exe), want))
		return;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, &old);
	fprintf(stderr, "heapwait: pid %d\n", (int)getpid());
	sigwait(&s, &sig);
	sigprocmask(SIG_SETMASK, &old, NULL);
}
