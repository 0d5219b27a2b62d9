/* --heap's byte sampling (bpf/heap_sample.h, as BPF runs it): the intervals
 * drawn are exponential with the mean asked for, so that an allocation of
 * size bytes is taken with probability 1 - exp(-size / rate), the
 * probability heap.pb.gz's values are divided by. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"
#include "bpf/heap_sample.h"

static uint32_t rng = 2463534242u;
static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Against -ln(U) in floating point, at the extremes and in between. */
static void test_log_exact(void)
{
	static const uint32_t rs[] = {0,	1,	    2,	      1000,	   65535,
				      1u << 20, 123456789u, 1u << 31, 3000000000u, 4294967294u};
	for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
		double want = -log(((double)rs[i] + 1) / 4294967296.0) * 1048576;
		double got = (double)heap_next_interval(1048576, rs[i]);

		/* The interpolation is exact to ~2^-16 of a unit of log2. */
		CHECKF(fabs(got - want) <= 1e-4 * want + 16, "r %u: %.1f, want %.1f", rs[i], got,
		       want);
	}
	CHECK(heap_next_interval(1048576, 4294967295u) == 1); /* U = 1: at least 1 */
}

/* The mean and the share under the mean (1 - 1/e) of a million draws. */
static void test_distribution(void)
{
	const uint64_t rate = 524288;
	const int n = 1000000;
	double sum = 0;
	int under = 0;

	for (int i = 0; i < n; i++) {
		uint64_t x = heap_next_interval(rate, next());

		sum += (double)x;
		under += x < rate;
	}
	CHECKF(fabs(sum / n - rate) < 0.005 * rate, "mean %.0f, want %llu", sum / n,
	       (unsigned long long)rate);
	CHECKF(fabs((double)under / n - (1 - exp(-1))) < 0.002, "under the mean %.4f",
	       (double)under / n);
}

int main(void)
{
	RUN_TEST(test_log_exact);
	RUN_TEST(test_distribution);
	CHECK_EXIT();
}
