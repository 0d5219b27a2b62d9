/* JIT code named from perf jitdump files and /tmp/perf-PID.map. */
#ifndef USER_JIT_H
#define USER_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;

/* At the start of the recording; jitdump_path is --jitdump's, or NULL. */
void jit_start(const char *jitdump_path);
/* Looks for the process's jitdump (mapped) and perf map, and keeps them
 * open: after the process exits they can still be read. */
void jit_scan(struct proc *p);
/* At the end: reads and parses every file found. */
void jit_load_all(void);
struct jit_line;

/* What named the code at a pc. */
struct jit_hit {
	const char *name;
	const char *file; /* source of pc, or NULL */
	int line;
	uint64_t start, size;	      /* the function's code */
	const struct jit_line *lines; /* its line table (jitdump DEBUG_INFO), or NULL */
	size_t nlines;
};

/* The JIT function at pc at time t (CLOCK_MONOTONIC ns): true when the
 * runtime's files name it. */
bool jit_find(struct proc *p, uint64_t pc, uint64_t t, struct jit_hit *hit);
/* Whether the process has a jitdump or perf map: its unnamed code is named
 * by the time of each sample. */
bool jit_has_files(const struct proc *p);
void jit_proc_free(struct proc *p);

#endif
