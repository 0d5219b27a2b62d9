/* JIT code named from perf jitdump files and /tmp/perf-PID.map. */
#ifndef USER_JIT_H
#define USER_JIT_H

#include <stdint.h>

struct proc;

/* At the start of the recording; jitdump_path is --jitdump's, or NULL. */
void jit_start(const char *jitdump_path);
/* Looks for the process's jitdump (mapped) and perf map, and keeps them
 * open: after the process exits they can still be read. */
void jit_scan(struct proc *p);
/* At the end: reads and parses every file found. */
void jit_load_all(void);
/* The JIT function at pc at time t (CLOCK_MONOTONIC ns), with its source
 * file and line when known; NULL when no file names it. */
const char *jit_name(struct proc *p, uint64_t pc, uint64_t t, const char **file, int *line);
/* The same, with the function's code range. */
const char *jit_lookup(struct proc *p, uint64_t pc, uint64_t t, const char **file, int *line,
		       uint64_t *start, uint64_t *size);
void jit_proc_free(struct proc *p);

#endif
