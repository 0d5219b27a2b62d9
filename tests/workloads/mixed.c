/* Whole stacks across three kinds of code, CPU split 6:3:1 by construction:
 * exe_spin, in this executable built without frame pointers (-O2
 * -fomit-frame-pointer: only its CFI can unwind it), lib_spin in libwork.so
 * (frame pointers), and a JIT-like stub copied into an anonymous executable
 * mapping (no CFI: only its frame pointer can), each called from below
 * main through a few frameless levels. Usage: mixed SECONDS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "work.h"

#define UNIT 200000UL

/* push %rbp; mov %rsp,%rbp; 1: dec %rdi; jnz 1b; pop %rbp; ret: a frame as
 * JIT runtimes that keep frame pointers set up. */
static const unsigned char stub_code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xff,
					  0xcf, 0x75, 0xfb, 0x5d, 0xc3};
static void (*stub)(unsigned long);
/* The stub's iterations per unit: one dec/jnz is cheaper than a unit's step
 * of the C loops, calibrated at start. */
static unsigned long stub_per_unit = UNIT;

__attribute__((noinline)) static void exe_spin(unsigned long units)
{
	volatile unsigned long x = 0;
	unsigned long i;

	for (i = 0; i < units * UNIT; i++)
		x += i ^ (x >> 3);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void round_of_work(void)
{
	exe_spin(6);
	lib_spin(3);
	stub(stub_per_unit);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
}

/* Levels of frameless calls between main and the work. */
__attribute__((noinline)) static void level(int d)
{
	if (d)
		level(d - 1);
	else
		round_of_work();
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2, t0, a, b;
	int i;
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(p, stub_code, sizeof(stub_code));
	stub = (void (*)(unsigned long))p;
	/* Calibration: the stub's iterations that take as long as a unit; the
	 * fastest of several tries each, as another task may take the CPU. */
	for (i = 0, a = b = 1e9; i < 7; i++) {
		t0 = now();
		exe_spin(10);
		if (now() - t0 < a)
			a = now() - t0;
		t0 = now();
		stub(10 * UNIT);
		if (now() - t0 < b)
			b = now() - t0;
	}
	if (a > 0 && b > 0)
		stub_per_unit = (unsigned long)(UNIT * a / b);
	if (!stub_per_unit)
		stub_per_unit = 1;
	t0 = now();
	while (now() - t0 < secs)
		level(3);
	return 0;
}
