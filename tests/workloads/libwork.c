/* The shared-library part of the split workload. */
#include "work.h"

#define UNIT 200000UL

/* At the start of a 64-byte line, as split.c's func_six and func_three:
 * the same loop at the same alignment. */
__attribute__((noinline, aligned(64))) void lib_spin(unsigned long units)
{
	volatile unsigned long x = 0;
	unsigned long i;

	for (i = 0; i < units * UNIT; i++)
		x += i ^ (x >> 3);
}

/* Does nothing: called in a loop, its PLT stub holds a good share of the
 * time (edges.c). */
__attribute__((noinline)) void lib_nop(void)
{
	__asm__ volatile("");
}
