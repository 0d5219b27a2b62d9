/* Deep stacks without frame pointers: `recurse DEPTH SECONDS [DELAY [wait]]`
 * sleeps DELAY seconds (default 0), recurses DEPTH calls of down() (built
 * gcc -O2 -fomit-frame-pointer: a small rsp-based frame each), then spins
 * in spin() for SECONDS of CPU time. Every sample in spin has a stack
 * DEPTH + a few frames deep, main at its root. The delay lets the recorder load the
 * unwind tables first: before, samples are copied for DWARF (8 KiB of
 * stack, less than a deep stack). With `wait`, the bottom of the recursion
 * blocks instead, in wait_bottom: nanosleep 10 ms at a time for SECONDS of
 * wall time, every wait (--off-cpu) under the whole recursion. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink; /* keeps the work from being optimized away */

/* Until SECONDS of the thread's CPU time: a loaded machine stretches the
 * wall time, not the samples. */
__attribute__((noinline)) static unsigned long spin(unsigned long x, double seconds)
{
	struct timespec ts;
	unsigned long i;

	do {
		for (i = 0; i < 200000; i++)
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < seconds);
	return x;
}

static int waiting; /* `wait`: block at the bottom, not spin */

/* Off the CPU for SECONDS of wall time, in waits of 10 ms. */
__attribute__((noinline)) static unsigned long wait_bottom(unsigned long x, double seconds)
{
	struct timespec t0, t, ten = {0, 10 * 1000 * 1000};

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		nanosleep(&ten, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return x;
}

/* Not a tail call (the sum after it), so each level keeps a frame. */
__attribute__((noinline)) static unsigned long down(int d, unsigned long x, double seconds)
{
	unsigned long r;

	if (d <= 1)
		return waiting ? wait_bottom(x, seconds) : spin(x, seconds);
	r = down(d - 1, x * 3 + 1, seconds);
	__asm__ volatile("" ::: "memory");
	return r + (unsigned long)d;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 600;
	double seconds = argc > 2 ? atof(argv[2]) : 1;

	waiting = argc > 4 && !strcmp(argv[4], "wait");
	if (argc > 3)
		usleep((useconds_t)(atof(argv[3]) * 1e6));
	sink = down(depth, 1, seconds);
	return 0;
}
