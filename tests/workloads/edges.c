/* Time spent at the edges of binaries, where no ordinary symbol names the
 * code, in three equal phases on one thread: clock_gettime in a loop (the
 * vdso's __vdso_clock_gettime), lib_nop() in a loop (through its PLT stub,
 * lib_nop@plt), and SIGUSR1 raised in a loop, its handler spinning (called
 * from glibc's __restore_rt). Each phase's function is called once. Usage:
 * edges SECONDS. */
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include "work.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void on_signal(int sig)
{
	volatile unsigned long x = 0;
	unsigned long i;

	(void)sig;
	for (i = 0; i < 20000; i++)
		x += i;
}

/* Inlined into its caller, yet with a body of its own (C99's extern
 * inline), as compilers leave functions that are also called from other
 * files: -t probes that body, which this program never calls. */
extern int inlined_twice(int x);
inline __attribute__((always_inline)) int inlined_twice(int x)
{
	return 2 * x;
}

static volatile int sink;

__attribute__((noinline)) static void vdso_phase(double end)
{
	while (now() < end)
		sink = inlined_twice(sink);
}

__attribute__((noinline)) static void plt_phase(double end)
{
	unsigned long i;

	while (now() < end)
		for (i = 0; i < 10000; i++)
			lib_nop();
}

__attribute__((noinline)) static void signal_phase(double end)
{
	while (now() < end)
		raise(SIGUSR1);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3, t = now();

	signal(SIGUSR1, on_signal);
	vdso_phase(t + secs / 3);
	plt_phase(t + 2 * secs / 3);
	signal_phase(t + secs);
	return 0;
}
