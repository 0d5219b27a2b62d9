/* Two programs in one pid: spins in before_exec for SECONDS, then execs
 * PROGRAM ARGS... (the gperftools file of each image must name its own
 * code). With EXECSPIN_AFTER=FILE in its environment, SECONDS count from
 * when FILE exists (it spins meanwhile): a test starts its recorder, waits
 * for it to say it is recording, then makes FILE, so that no start-up, however
 * slow, outlasts the first program. Usage: execspin SECONDS PROGRAM [ARGS...] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void before_exec(double seconds)
{
	volatile unsigned long x = 0;
	double end = now() + seconds;

	while (now() < end)
		for (unsigned long i = 0; i < 100000; i++)
			x += i ^ (x >> 3);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: execspin SECONDS PROGRAM [ARGS...]\n");
		return 2;
	}
	if (getenv("EXECSPIN_AFTER"))
		while (access(getenv("EXECSPIN_AFTER"), F_OK))
			before_exec(0.01);
	before_exec(atof(argv[1]));
	execv(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
