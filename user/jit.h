/* JIT code named from perf jitdump files and /tmp/perf-PID.map. */
#ifndef USER_JIT_H
#define USER_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct procs;
struct frame;

/* At the start of the recording; jitdump_path is --jitdump's, or NULL. */
void jit_start(const char *jitdump_path);
/* Looks for the process's jitdump (mapped) and perf map, and keeps them
 * open: after the process exits they can still be read. */
void jit_scan(struct proc *p);
/* At the end: reads and parses every file found. */
void jit_load_all(struct procs *procs);
struct jit_line;

/* What named the code at a pc. */
struct jit_hit {
	const char *name;	 /* demangled, as symbols are */
	const char *system_name; /* the name in the file when it differs (mangled), or NULL */
	const char *file;	 /* source of pc, or NULL */
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
/* Counts a sample whose user leaf is this frame (interned): in executable
 * memory that no file backs, and no symbol names, it is JIT code. */
void jit_count_leaf(struct proc *p, const struct frame *leaf);
/* The process exited: its files are looked for once more, through the root
 * kept while it ran (a runtime may write them as it exits, as Java's
 * -XX:+DumpPerfMapAtExit does), and kept only if it ran JIT code. */
void jit_on_exit(struct proc *p);

/* More than this share of a process's samples in JIT code that no file
 * names: it is told how to have its runtime name it. */
#define JIT_GUIDE_SHARE 0.05
struct jit_guide {
	double share;	     /* of the process's samples */
	const char *runtime; /* "node", "java", "dotnet", "python" or "unknown" */
	char fix[320];	     /* the flag or command that names it */
};
/* Once its files are read (jit_load_all; or as it is folded away, with
 * none): the guidance for the process, warned once, or NULL when its JIT
 * code is named (or it ran little). */
const struct jit_guide *jit_guide(const struct proc *p);
void jit_proc_free(struct proc *p);

#endif
