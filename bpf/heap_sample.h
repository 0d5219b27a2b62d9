/* The byte sampling of --heap: the next interval of a Poisson process whose
 * mean is rate bytes, from a uniform 32-bit random number, in integers only
 * (BPF has no floating point). Shared by bpf/heap.bpf.c and its unit test
 * (tests/unit/test_heap_sample.c), which checks the draws' distribution. */
#ifndef BPF_HEAP_SAMPLE_H
#define BPF_HEAP_SAMPLE_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* log2(1 + i/64) in Q16, i = 0..64: the fraction of a log2 from the six
 * bits after the leading one, the bits below interpolated. */
static const unsigned heap_log2_tab[65] = {
    0,	   1466,  2909,	 4331,	5732,  7112,  8473,  9814,  11136, 12440, 13727, 14996, 16248,
    17484, 18704, 19909, 21098, 22272, 23433, 24579, 25711, 26830, 27936, 29029, 30109, 31178,
    32234, 33279, 34312, 35334, 36346, 37346, 38336, 39316, 40286, 41246, 42196, 43137, 44068,
    44990, 45904, 46809, 47705, 48593, 49472, 50344, 51207, 52063, 52911, 53751, 54584, 55410,
    56229, 57040, 57845, 58643, 59434, 60219, 60997, 61769, 62534, 63294, 64047, 64794, 65536};

/* -rate * ln(U), U = (r + 1) / 2^32 in (0, 1]: an exponential draw of mean
 * rate, at least 1. The log's error is under 2^-16 of a unit of log2, far
 * below the sampling's own noise. */
static __always_inline unsigned long long heap_next_interval(unsigned long long rate, unsigned r)
{
	unsigned long long x = (unsigned long long)r + 1, y = x, l2, nl, m;
	unsigned k = 0, i, lo, hi;

	if (y >> 32) /* r = 2^32 - 1: U = 1 */
		return 1;
	if (y >> 16) {
		k += 16;
		y >>= 16;
	}
	if (y >> 8) {
		k += 8;
		y >>= 8;
	}
	if (y >> 4) {
		k += 4;
		y >>= 4;
	}
	if (y >> 2) {
		k += 2;
		y >>= 2;
	}
	if (y >> 1)
		k += 1;
	/* The bits after the leading one, as a 32-bit fraction. */
	m = (x << (32 - k)) & 0xffffffffULL;
	i = (unsigned)(m >> 26) & 63;
	lo = heap_log2_tab[i];
	hi = heap_log2_tab[i + 1];
	l2 = ((unsigned long long)k << 16) + lo + (((hi - lo) * (m & ((1u << 26) - 1))) >> 26);
	nl = (32ULL << 16) - l2; /* -log2(U), Q16 */
	/* * ln 2 (45426 in Q16); rate * nl first keeps the precision, and
	 * stays below 2^64 for any rate under 2^43. */
	x = ((rate * nl) >> 16) * 45426 >> 16;
	return x ? x : 1;
}

#endif
