/* Poses as a node binary: exports V8's postmortem metadata (v8dbg_*) from
 * .dynsym (built with -rdynamic), with hostile values: a frame slot above
 * rbp, a string field far outside any object. bpftrace-rec must say so in
 * one line and keep the frames native (tests/integration/test_node.sh).
 * Spins for argv[1] seconds. */
#include <stdlib.h>
#include <time.h>

int v8dbg_off_fp_function = 4096; /* not below rbp */
int v8dbg_off_fp_context = -8;
int v8dbg_class_HeapObject__map__Map = 0;
int v8dbg_class_Map__instance_type__uint16_t = 12;
int v8dbg_class_String__length__int32_t = 1 << 20;
int v8dbg_FirstNonstringType = 128;

static volatile unsigned long sink;

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * 31;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
