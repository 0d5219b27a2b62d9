/* Calls free a known number of times, for -t's count of libc's free.
 * Usage: frees N. Prints "ready PID", waits for SIGUSR1 (the tracers attached),
 * then mallocs and frees N blocks and exits. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *volatile keep; /* the compiler must not elide a malloc/free pair */

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, i;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (sigwait(&set, &sig))
		return 1;
	for (i = 0; i < n; i++) {
		keep = malloc(16 + i % 64);
		free(keep);
	}
	return 0;
}
