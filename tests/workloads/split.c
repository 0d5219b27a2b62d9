/* CPU split known by construction: for each round, func_six does 6 units of
 * work, func_three 3 and lib_spin (in libwork.so) 1, so a profile must show
 * about 60%, 30% and 10% -- on two threads, each doing the same.
 * Usage: split SECONDS [DELAY] (0: run until killed); the second thread
 * starts DELAY seconds after the first, or (DELAY -1) at a SIGUSR1: a test
 * starts it once its recording runs, however long that took to start.
 * Prints "ready" once running. With
 * SPLIT_CPU=FILE, writes the seconds of CPU both threads used into FILE at
 * the end: on a loaded machine the samples a recording can hold follow that,
 * not the run's length. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include "work.h"

#define UNIT 200000UL

static double seconds, delay;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The three loops are the same code, each at the start of a 64-byte line
 * (lib_spin's too): aligned apart, the same loop can run at a different
 * speed on some CPUs, and the time then need not follow the work. One CI
 * run gave func_six 65.3 %, func_three 26.9 %, lib_spin 7.7 % of a window
 * (test_window); func_six's loop began 2 bytes before a line boundary,
 * func_three's 4, lib_spin's elsewhere again. */
__attribute__((noinline, aligned(64))) void func_six(unsigned long units)
{
	volatile unsigned long x = 0;
	unsigned long i;

	for (i = 0; i < units * UNIT; i++)
		x += i ^ (x >> 3);
}

__attribute__((noinline, aligned(64))) void func_three(unsigned long units)
{
	volatile unsigned long x = 0;
	unsigned long i;

	for (i = 0; i < units * UNIT; i++)
		x += i ^ (x >> 3);
}

static void *worker(void *arg)
{
	unsigned seed = arg ? 7 : 1; /* per thread: no shared state */
	double end;

	if (arg && delay < 0) {
		sigset_t usr1;
		int sig;

		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigwait(&usr1, &sig);
	} else if (arg) {
		struct timespec ts = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};

		nanosleep(&ts, NULL);
	}
	end = now() + seconds;
	while (seconds <= 0 || now() < end) {
		/* Rounds of 1 to 4 times the 6:3:1: a round of fixed length
		 * (about 2 ms) phase-locks with a 499 Hz sampler, and the
		 * shares then drifted by up to 8 points between runs. */
		unsigned long k = 1 + (seed = seed * 1103515245u + 12345u) % 4;

		func_six(6 * k);
		func_three(3 * k);
		lib_spin(k);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	seconds = argc > 1 ? atof(argv[1]) : 3;
	delay = argc > 2 ? atof(argv[2]) : 0;
	if (delay < 0) { /* blocked in both threads: the second waits for it */
		sigset_t usr1;

		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	}
	if (pthread_create(&t, NULL, worker, &delay))
		return 1;
	printf("ready\n");
	fflush(stdout);
	worker(NULL);
	pthread_join(t, NULL);
	if (getenv("SPLIT_CPU")) {
		struct rusage ru;
		FILE *f = fopen(getenv("SPLIT_CPU"), "w");

		if (!f || getrusage(RUSAGE_SELF, &ru))
			return 1;
		fprintf(f, "%.6f\n",
			ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
			    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
		return fclose(f) != 0;
	}
	return 0;
}
