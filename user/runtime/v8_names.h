/* JavaScript frames in the recorded stacks: a source of names (user/proc.h's
 * struct name_source) over the V8 processes of user/runtime/v8.c, as
 * user/runtime/jvm_names.c is over the JVMs.
 *
 * When a process's maps are read it is looked for V8; one whose metadata
 * gives every layout goes into the BPF step's v8_procs (bpf/runtime/v8.bpf.c), so
 * that its samples' JavaScript frames are recorded. Each recorded frame's
 * user ip is then replaced by its function (its rewrite hook), named with
 * its script (its find hook). */
#ifndef USER_V8_NAMES_H
#define USER_V8_NAMES_H

#include <stdint.h>
#include <sys/types.h>

struct v8;
struct name_source;

/* What became of the recorded samples' JavaScript frames (summary.json). */
struct v8_names_stats {
	uint64_t samples;   /* sample records with JavaScript frames */
	uint64_t frames;    /* recorded frames named */
	uint64_t unnamed;   /* recorded frames left native: moved, freed or unreadable */
	uint64_t inlined;   /* frames added for functions Turbofan inlined */
	uint64_t truncated; /* records whose JavaScript frames were cut (SAMPLE_V8_TRUNC) */
};

struct v8_names;
/* v: the recording's (held by the recorder, outlives this); procs_fd: the
 * BPF step's v8_procs, or -1. 0 or -ENOMEM. */
int v8_names_new(struct v8_names **out, struct v8 *v, int procs_fd);
void v8_names_free(struct v8_names *vn);
void v8_names_source(struct v8_names *vn, struct name_source *out);
/* The process exec'd or exited: looked for again in its next maps, and it
 * leaves v8_procs. */
void v8_names_forget(struct v8_names *vn, pid_t pid);
void v8_names_get_stats(const struct v8_names *vn, struct v8_names_stats *out);
/* Whether pid is a V8 whose frames are named (the JIT guidance's test). */
int v8_names_walked(const struct v8_names *vn, pid_t pid);

#endif
