/* CPU split known by construction: for each round, func_six does 6 units of
 * work, func_three 3 and lib_spin (in libwork.so) 1, so a profile must show
 * about 60%, 30% and 10% -- on two threads, each doing the same.
 * Usage: split SECONDS [DELAY] (0: run until killed); the second thread
 * starts DELAY seconds after the first. Prints "ready" once running. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

	if (arg) {
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
	if (pthread_create(&t, NULL, worker, &delay))
		return 1;
	printf("ready\n");
	fflush(stdout);
	worker(NULL);
	pthread_join(t, NULL);
	return 0;
}
