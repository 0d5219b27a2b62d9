/* Poses as a node binary: exports V8's postmortem metadata (v8dbg_*) from
 * .dynsym (built with -rdynamic), with hostile values: a frame slot above
 * rbp, a string field far outside any object. bpftrace-rec must say so in
 * one line and keep the frames native (tests/integration/test_node.sh).
 * Spins for argv[1] seconds.
 *
 * Built twice more: as libfakev8.so (-DFAKEV8_LIB: the constants and
 * fakev8_spin) and as fakev8late (-DFAKEV8_LATE: no constants; spins on
 * its own for 0.5 s, then dlopens argv[2] and spins in its fakev8_spin),
 * a V8 that is not in the maps first read, as a node whose libnode ld.so
 * has not mapped yet. */
#include <stdlib.h>
#include <time.h>
#ifdef FAKEV8_LATE
#include <dlfcn.h>
#include <stdio.h>
#endif

#ifndef FAKEV8_LATE
int v8dbg_off_fp_function = 4096; /* not below rbp */
int v8dbg_off_fp_context = -8;
int v8dbg_class_HeapObject__map__Map = 0;
int v8dbg_class_Map__instance_type__uint16_t = 12;
int v8dbg_class_String__length__int32_t = 1 << 20;
int v8dbg_FirstNonstringType = 128;
#endif

static volatile unsigned long sink;

/* The library's is exported; the late program's is its own. */
#ifdef FAKEV8_LATE
#define SPIN_LINKAGE static
#else
#define SPIN_LINKAGE
#endif
SPIN_LINKAGE void fakev8_spin(double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * 31;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

#ifndef FAKEV8_LIB
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
#ifdef FAKEV8_LATE
	void *h;
	void (*spin)(double);

	fakev8_spin(0.5);
	if (argc < 3 || !(h = dlopen(argv[2], RTLD_NOW)) ||
	    !(*(void **)&spin = dlsym(h, "fakev8_spin"))) {
		fprintf(stderr, "fakev8late: %s\n", dlerror());
		return 1;
	}
	spin(secs);
#else
	fakev8_spin(secs);
#endif
	return 0;
}
#endif
