/* Fixed work for benchmarks: ITERATIONS (argv[1], default 4e8) of a small
 * loop on each of two threads, through a few calls so stacks have depth.
 * Its run time under a profiler, against alone, is the profiler's cost. */
#include <pthread.h>
#include <stdlib.h>

static unsigned long iters = 400000000UL;

__attribute__((noinline)) static unsigned long step(unsigned long x, unsigned long i)
{
	return x * 2862933555777941757UL + i;
}

__attribute__((noinline)) static unsigned long chunk(unsigned long from, unsigned long n)
{
	unsigned long x = from, i;

	for (i = 0; i < n; i++)
		x = step(x, i);
	return x;
}

static void *run(void *arg)
{
	unsigned long i, x = (unsigned long)arg;

	for (i = 0; i < iters; i += 100000)
		x ^= chunk(x, 100000);
	return (void *)x;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *r;

	if (argc > 1)
		iters = strtoul(argv[1], NULL, 10);
	pthread_create(&t, NULL, run, (void *)1);
	run((void *)2);
	pthread_join(t, &r);
	return 0;
}
