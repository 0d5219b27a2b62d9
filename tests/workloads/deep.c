/* Deep frame-pointer stacks: `deep DEPTH FRAME SECONDS` recurses DEPTH calls
 * of level(), each with a frame of about FRAME bytes, then spins in bottom()
 * for SECONDS of its CPU time (not the clock's: on a loaded machine a short
 * run's own work then stays what it is beside its exec and exit, which cost
 * the same CPU however loaded; test_capture's short runs had 63% of their
 * samples in bottom() under two busy loops, 90% idle). The frame chain then
 * spans DEPTH * FRAME bytes of stack, more than one read of it covers. */
#include <alloca.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds = 2;
volatile unsigned long sink; /* keeps the work from being optimized away */
static size_t frame = 256;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long bottom(unsigned long x)
{
	double end = now() + seconds;
	unsigned long i;

	while (now() < end)
		for (i = 0; i < 100000; i++)
			x = x * 2862933555777941757UL + i;
	return x;
}

__attribute__((noinline)) static unsigned long level(int d, unsigned long x)
{
	volatile char *pad = alloca(frame);

	memset((char *)pad, (int)x, frame);
	if (d <= 1)
		return bottom(x + pad[0]);
	/* Not a tail call: the frame stays on the stack. */
	return level(d - 1, x + pad[frame - 1]) + pad[0];
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 60;

	if (argc > 2)
		frame = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		seconds = atof(argv[3]);
	sink = level(depth, 1);
	return 0;
}
