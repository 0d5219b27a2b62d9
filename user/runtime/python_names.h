/* Python frames in the recorded stacks: a source of names (user/proc.h's
 * struct name_source) over the CPython interpreters of user/runtime/python.c.
 *
 * When a process's maps are read it is looked for a CPython; one with a
 * layout is put in the BPF walk's py_procs (bpf/runtime/python.bpf.c), so that its
 * samples carry their thread's Python frames. Each sample's native
 * _PyEval_EvalFrameDefault frames are then replaced by the Python frames
 * they were running (its rewrite hook), each named by its code object:
 * co_qualname (3.11 on) or co_name, co_filename, the line of its
 * instruction, the function's first line. */
#ifndef USER_PYTHON_NAMES_H
#define USER_PYTHON_NAMES_H

#include <stdint.h>
#include <sys/types.h>

struct python;
struct name_source;

/* What became of the recorded samples' Python frames (summary.json). */
struct py_names_stats {
	uint64_t samples; /* sample records with Python frames */
	uint64_t merged;  /* of those, stacks with Python frames in them */
	uint64_t frames;  /* Python frames named */
	uint64_t
	    unnamed; /* frames left native: their code object not readable, or not the sample's */
	uint64_t leftover;  /* runs with no native evaluation frame left, put at the root */
	uint64_t truncated; /* records whose Python frames were cut (SAMPLE_PY_TRUNC) */
	/* Records taken as the innermost evaluation call entered or left its
	 * frame (not linked): its native frame left so (python_names.c). */
	uint64_t edge;
};

struct py_names;
/* py: the recording's (held by the recorder, outlives this); procs_fd: the
 * BPF walk's py_procs, or -1. 0 or -ENOMEM. */
int py_names_new(struct py_names **out, struct python *py, int procs_fd);
void py_names_free(struct py_names *pn);
void py_names_source(struct py_names *pn, struct name_source *out);
/* The process exec'd or exited: its interpreter is looked for again in its
 * next maps, and it leaves py_procs. */
void py_names_forget(struct py_names *pn, pid_t pid);
void py_names_get_stats(const struct py_names *pn, struct py_names_stats *out);

#endif
