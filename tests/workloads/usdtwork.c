/* USDT probes of its own (systemtap-sdt-dev's <sys/sdt.h>), fired a known
 * number of times: with JOBS = argv[1] (default 100), after waiting
 * argv[2] ms, or with argv[2] "@FILE" until FILE exists (a recorder
 * attaches by -p meanwhile; default: no wait),
 *   job__start/job__done JOBS pairs, each holding two req__start/req__done
 *   pairs (which fire only when their semaphore is set, as a tracer sets
 *   it), one depth__start/depth__done recursion 3 deep, and one tick
 *   (an instant) with the job's number;
 * then lone__start once (no done exists) and it prints "done JOBS". JOBS 0 runs until killed. */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

/* With semaphores every probe has one (as PostgreSQL's and CPython's do):
 * the tracer's uprobes count themselves in it. req__start and req__done
 * fire only when theirs is set; the others fire whatever it holds. */
#define SEMAPHORE(p) unsigned short bprec_##p##_semaphore __attribute__((section(".probes")))
SEMAPHORE(req__start);
SEMAPHORE(req__done);
SEMAPHORE(job__start);
SEMAPHORE(job__done);
SEMAPHORE(depth__start);
SEMAPHORE(depth__done);
SEMAPHORE(tick);
SEMAPHORE(lone__start);

static volatile unsigned long sink;

__attribute__((noinline)) static void spin(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) static void depth(int d)
{
	DTRACE_PROBE1(bprec, depth__start, d);
	spin(2000);
	if (d > 1)
		depth(d - 1);
	DTRACE_PROBE1(bprec, depth__done, d);
}

int main(int argc, char **argv)
{
	const char *go = argc > 2 && argv[2][0] == '@' ? argv[2] + 1 : NULL;
	long jobs = argc > 1 ? atol(argv[1]) : 100, wait_ms = argc > 2 && !go ? atol(argv[2]) : 0,
	     j;
	struct timespec ts = {wait_ms / 1000, wait_ms % 1000 * 1000000L}, tick = {0, 10000000L};

	if (wait_ms)
		nanosleep(&ts, NULL);
	while (go && access(go, F_OK))
		nanosleep(&tick, NULL);
	for (j = 0; j < jobs || jobs == 0; j++) {
		DTRACE_PROBE1(bprec, job__start, j);
		for (int r = 0; r < 2; r++) {
			if (bprec_req__start_semaphore)
				DTRACE_PROBE2(bprec, req__start, j, r);
			spin(5000);
			if (bprec_req__done_semaphore)
				DTRACE_PROBE2(bprec, req__done, j, r);
		}
		depth(3);
		DTRACE_PROBE1(bprec, tick, j);
		DTRACE_PROBE1(bprec, job__done, j);
	}
	/* A start without a done anywhere in the program: an error when asked
	 * for by name, an instant when a glob matches it. */
	DTRACE_PROBE(bprec, lone__start);
	printf("done %ld\n", jobs);
	return 0;
}
