/* Leaf callers: hot_leaf does all the work and is called by caller_two
 * (two thirds) and caller_one (one third). Built by gcc -O2 with frame
 * pointers, whose leaves still set up no frame: a frame-pointer walk skips
 * the caller of hot_leaf unless the CFI at the sampled ip puts it back.
 * Usage: leafy SECONDS. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long hot_leaf(unsigned long n)
{
	unsigned long x = 0, i;

	for (i = 0; i < n; i++)
		x = x * 31 + (i ^ (x >> 7));
	return x;
}

__attribute__((noinline)) void caller_one(void)
{
	sink += hot_leaf(1000000);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) void caller_two(void)
{
	sink += hot_leaf(2000000);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		caller_one();
		caller_two();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	return 0;
}
