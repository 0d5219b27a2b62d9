/* JIT code named from perf jitdump files and /tmp/perf-PID.map. */
#ifndef USER_JIT_H
#define USER_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;
struct procs;
struct frame;
struct name_source;

/* At the start of the recording; jitdump_path is --jitdump's, or NULL. */
void jit_start(const char *jitdump_path);
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
/* The source of names (user/proc.h) that the JIT files are: it looks for
 * a process's jitdump (mapped) and perf map as its maps are read, keeping
 * them open (they are read after it exits), names its frames by the time
 * of each sample (a runtime reuses addresses), and counts the samples whose
 * user leaf is unnamed code in executable memory no file backs (JIT code,
 * for jit_guide). */
void jit_name_source(struct name_source *out);
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
