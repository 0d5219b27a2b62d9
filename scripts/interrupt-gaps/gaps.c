/* The time a CPU-bound thread loses to interrupts, seen from the thread:
 * pinned to one CPU, it reads CLOCK_MONOTONIC in a loop, and every step
 * longer than THRESHOLD_NS is a gap (an interrupt, or the host taking the
 * vCPU). Prints the gaps per second and the time they took, in total and
 * below 100 us (without the host's longer preemptions).
 * Usage: gaps SECONDS [CPU [THRESHOLD_NS]] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_GAPS (1 << 22)

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0;
	int cpu = argc > 2 ? atoi(argv[2]) : 1;
	uint64_t threshold = argc > 3 ? strtoull(argv[3], NULL, 10) : 1000;
	uint64_t *gaps, start, end, prev, t, sum = 0, sum_short = 0, n_short = 0;
	size_t n = 0, i;
	cpu_set_t set;

	if (secs <= 0) {
		fprintf(stderr, "usage: gaps SECONDS [CPU [THRESHOLD_NS]]\n");
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("gaps: sched_setaffinity");
		return 1;
	}
	gaps = malloc(MAX_GAPS * sizeof(*gaps));
	if (!gaps) {
		perror("gaps");
		return 1;
	}
	start = prev = now_ns();
	end = start + (uint64_t)(secs * 1e9);
	while ((t = now_ns()) < end) {
		if (t - prev > threshold && n < MAX_GAPS)
			gaps[n++] = t - prev;
		prev = t;
	}
	qsort(gaps, n, sizeof(*gaps), cmp_u64);
	for (i = 0; i < n; i++) {
		sum += gaps[i];
		if (gaps[i] < 100000)
			sum_short += gaps[i], n_short++;
	}
	printf("gaps_per_s %.0f median_us %.2f stolen_ms_per_s %.3f short_stolen_ms_per_s %.3f\n",
	       n / secs, n ? gaps[n / 2] / 1e3 : 0.0, sum / 1e6 / secs, sum_short / 1e6 / secs);
	free(gaps);
	return 0;
}
