/* Deterministic calls for exact tracing: with ROUNDS = argv[1] (default 200)
 * on each of two threads, the exact call counts are
 *   run_thread 2, mid 2*ROUNDS, leaf 6*ROUNDS, fib 2*ROUNDS*177 (fib(10)).
 * Built twice: plain (traced with -t) and with -fxray-instrument (XRay's own
 * FDR mode, when XRAY_OPTIONS asks for it), which must count the same.
 * ROUNDS 0 runs until killed, for recording a live process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef WITH_XRAY
/* compiler-rt's XRay log interface (extern "C"; its header is C++ only). */
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);
#define XRAY_LOG_INITIALIZED 2
#endif

static int rounds = 200;
static volatile int sink;

__attribute__((noinline)) int leaf(int x)
{
	return x * 2 + 1;
}

__attribute__((noinline)) int mid(int x)
{
	int s = 0, i;

	for (i = 0; i < 3; i++)
		s += leaf(x + i);
	return s;
}

__attribute__((noinline)) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) void *run_thread(void *arg)
{
	int r;

	(void)arg;
	for (r = 0; r < rounds || rounds == 0; r++)
		sink += mid(r) + fib(10);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	int i;

	if (argc > 1)
		rounds = atoi(argv[1]);
#ifdef WITH_XRAY
	if (__xray_log_init_mode("xray-fdr", "") != XRAY_LOG_INITIALIZED)
		fprintf(stderr, "calls: XRay FDR mode not initialized (set XRAY_OPTIONS)\n");
#endif
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, run_thread, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
#ifdef WITH_XRAY
	__xray_log_finalize();
	__xray_log_flushLog();
#endif
	printf("%d\n", sink);
	return 0;
}
