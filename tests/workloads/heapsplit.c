/* --heap's workload (tests/integration/test_heap.sh): three functions
 * allocating 6:3:1 of the bytes, the same blocks of mixed sizes (16 B to
 * 1 MiB, log-uniform) each, six times, three times and once a round:
 * alloc_six frees everything it allocated, alloc_three keeps every other
 * block, alloc_one keeps all. It prints the true bytes of each and those
 * still in use at its end, which the heap profile's estimates are checked
 * against.
 *   heapsplit [ROUNDS [WAIT_S [HOLD_S]]]   malloc and calloc
 *   heapsplit -r ROUNDS [WAIT_S [HOLD_S]]  each block grown by a realloc chain
 *   heapsplit -l SECONDS                   leak_site leaks 1 MiB/s (of the wall clock),
 *                                          churn frees all it allocates
 * WAIT_S: a sleep before the work (for -p to attach), which SIGUSR1 ends (a
 * test that sees the recorder attached starts the work at once); HOLD_S:
 * after it, with the blocks held (for -p's stop to see them in use). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSIZES 256

static size_t sizes[NSIZES];
static int use_realloc;

/* The pointers kept, so that no block is freed before the end. */
static void **kept;
static size_t nkept, kept_cap;

static void keep(void *p)
{
	if (nkept == kept_cap) {
		kept_cap = kept_cap ? 2 * kept_cap : 4096;
		kept = realloc(kept, kept_cap * sizeof(*kept));
		if (!kept)
			abort();
	}
	kept[nkept++] = p;
}

/* xorshift: the same sizes in every run. */
static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A block of size bytes: malloc or calloc by turns; with -r, grown to its
 * size by realloc from a quarter and a half of it (the bytes asked for are
 * then those three sizes, counted in *asked). */
static __attribute__((noinline)) void *block(size_t i, size_t size, uint64_t *asked)
{
	void *p;

	if (use_realloc) {
		p = malloc(size / 4 + 1);
		p = realloc(p, size / 2 + 1);
		p = realloc(p, size);
		*asked += size / 4 + 1 + size / 2 + 1 + size;
	} else {
		p = i % 3 ? malloc(size) : calloc(1, size);
		*asked += size;
	}
	if (!p)
		abort();
	/* Touched, as a program's blocks are; a page each is enough. */
	memset(p, 1, size < 4096 ? size : 4096);
	return p;
}

/* Each allocates every size once per call; keep_every: 0 frees every
 * block, 2 keeps every other, 1 keeps all. *held: the bytes kept. */
static __attribute__((noinline)) uint64_t alloc_six(uint64_t *held)
{
	uint64_t asked = 0;

	(void)held;
	for (size_t i = 0; i < NSIZES; i++)
		free(block(i, sizes[i], &asked));
	return asked;
}

static __attribute__((noinline)) uint64_t alloc_three(uint64_t *held)
{
	uint64_t asked = 0;

	for (size_t i = 0; i < NSIZES; i++) {
		void *p = block(i, sizes[i], &asked);

		if (i % 2) {
			keep(p);
			*held += sizes[i];
		} else {
			free(p);
		}
	}
	return asked;
}

static __attribute__((noinline)) uint64_t alloc_one(uint64_t *held)
{
	uint64_t asked = 0;

	for (size_t i = 0; i < NSIZES; i++) {
		keep(block(i, sizes[i], &asked));
		*held += sizes[i];
	}
	return asked;
}

static __attribute__((noinline)) void leak_site(void)
{
	void *p = malloc(10486); /* every 10 ms: 1 MiB/s */

	if (!p)
		abort();
	memset(p, 2, 64);
	keep(p);
}

static __attribute__((noinline)) void churn(void)
{
	for (int i = 0; i < 8; i++) {
		void *p = malloc(2048 + (next() % 4096));

		if (!p)
			abort();
		memset(p, 3, 64);
		free(p);
	}
}

/* SIGUSR1: its handler only interrupts the wait's sleep. */
static void wake(int sig)
{
	(void)sig;
}

/* 1 MiB a second of the wall clock: leak_site called as often as is due
 * by the time elapsed, not once a sleep, which a loaded machine stretched
 * (16 s of sleeps took 19 s under the probes: 0.84 MiB/s). */
static void leak(int seconds)
{
	struct timespec ts = {0, 10 * 1000 * 1000}, t0, t;
	long done = 0, due;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		due = (t.tv_sec - t0.tv_sec) * 100 + (t.tv_nsec - t0.tv_nsec) / 10000000;
		if (due >= seconds * 100L)
			break;
		for (; done <= due; done++) {
			leak_site();
			churn();
		}
		nanosleep(&ts, NULL);
	}
	printf("leaked %zu blocks\n", nkept);
}

int main(int argc, char **argv)
{
	uint64_t six = 0, three = 0, one = 0, h6 = 0, h3 = 0, h1 = 0;
	int rounds = 4, wait_s = 0, hold_s = 0, a = 1;

	if (argc > 2 && !strcmp(argv[1], "-l")) {
		leak(atoi(argv[2]));
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "-r")) {
		use_realloc = 1;
		a = 2;
	}
	if (argc > a)
		rounds = atoi(argv[a]);
	if (argc > a + 1)
		wait_s = atoi(argv[a + 1]);
	if (argc > a + 2)
		hold_s = atoi(argv[a + 2]);
	for (size_t i = 0; i < NSIZES; i++) {
		/* log-uniform in [16, 1 MiB]: 2^4 to 2^20 */
		double e = 4 + 16.0 * (double)(next() % 1000000) / 1000000.0;
		size_t s = 1;

		while (e >= 1) {
			s *= 2;
			e -= 1;
		}
		sizes[i] = (size_t)(s * (1 + e)); /* 2^k * (1 + f): close enough */
	}
	struct timespec t0, t1;

	/* Before the pid is told: a test that sends it has the handler. */
	signal(SIGUSR1, wake);
	fprintf(stderr, "heapsplit: pid %d\n", getpid());
	sleep(wait_s);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 6; k++)
			six += alloc_six(&h6);
		for (int k = 0; k < 3; k++)
			three += alloc_three(&h3);
		one += alloc_one(&h1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* The work's own time, for scripts/bench-heap.sh: not the start's. */
	printf("work_ms %.1f\n", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	printf("alloc alloc_six=%llu alloc_three=%llu alloc_one=%llu total=%llu\n",
	       (unsigned long long)six, (unsigned long long)three, (unsigned long long)one,
	       (unsigned long long)(six + three + one));
	printf("inuse alloc_six=%llu alloc_three=%llu alloc_one=%llu total=%llu\n",
	       (unsigned long long)h6, (unsigned long long)h3, (unsigned long long)h1,
	       (unsigned long long)(h6 + h3 + h1));
	fflush(stdout);
	sleep(hold_s);
	return 0;
}
