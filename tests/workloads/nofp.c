/* A workload without frame pointers (built -O2 -fomit-frame-pointer): a few
 * levels of its own functions and qsort with a comparator, for the CFI
 * walk's exactness test. Runs for argv[1] seconds (default 1). */
#include <stdlib.h>
#include <time.h>

static unsigned seed = 1;

static int cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) static void sort_some(int *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		v[i] = (int)(seed = seed * 1103515245u + 12345u);
	qsort(v, n, sizeof(*v), cmp);
}

/* Not a tail call (the sum after it), so each level keeps a frame. Global:
 * the test puts a uretprobe on it by name. */
long level(int d, int *v, int n);
__attribute__((noinline)) long level(int d, int *v, int n)
{
	long r;

	if (d <= 0) {
		sort_some(v, n);
		return v[0];
	}
	r = level(d - 1, v, n);
	__asm__ volatile("" ::: "memory");
	return r + d;
}

int main(int argc, char **argv)
{
	static int v[4096];
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t0, t;
	long sum = 0;
	int i = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sum += level(i++ % 6, v, 4096);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return sum == 42;
}
