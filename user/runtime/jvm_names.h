/* Java frames in the recorded stacks: a source of names (user/proc.h's
 * struct name_source) over the JVMs of user/runtime/jvm.c, as user/runtime/python_names.c
 * is over CPython's.
 *
 * When a process's maps are read it is looked for a JVM; one whose tables
 * give every layout goes into the BPF walk's jvm_procs (bpf/runtime/jvm.bpf.c), so
 * that its samples' frames in the code cache are stepped by HotSpot's rules
 * and recorded. Each recorded frame's user ip is then replaced by the Java
 * frames it stands for (its rewrite hook): a compiled frame by its inlined
 * methods, innermost first, then its own; each named com.example.Foo.bar,
 * with its source file and line (its find hook). */
#ifndef USER_JVM_NAMES_H
#define USER_JVM_NAMES_H

#include <stdint.h>
#include <sys/types.h>

struct jvm;
struct name_source;

/* What became of the recorded samples' Java frames (summary.json). */
struct jvm_names_stats {
	uint64_t samples;    /* sample records with Java frames */
	uint64_t frames;     /* recorded frames named */
	uint64_t inlined;    /* methods named inside compiled frames, beyond their own */
	uint64_t unnamed;    /* recorded frames left native: freed, reused or unreadable */
	uint64_t gone;	     /* of them, those whose code or method was unloaded, or was
				another's, by the time it was read (jvm_frame_names' -ESTALE) */
	uint64_t truncated;  /* records whose Java frames were cut (SAMPLE_JVM_TRUNC) */
	uint64_t inline_cut; /* compiled frames whose inlined methods were not all read */
};

struct jvm_names;
/* j: the recording's (held by the recorder, outlives this); procs_fd: the
 * BPF walk's jvm_procs, or -1. 0 or -ENOMEM. */
int jvm_names_new(struct jvm_names **out, struct jvm *j, int procs_fd);
void jvm_names_free(struct jvm_names *jn);
void jvm_names_source(struct jvm_names *jn, struct name_source *out);
/* The process exec'd or exited: looked for again in its next maps, and it
 * leaves jvm_procs. */
void jvm_names_forget(struct jvm_names *jn, pid_t pid);
void jvm_names_get_stats(const struct jvm_names *jn, struct jvm_names_stats *out);
/* Whether pid is a JVM whose frames are walked (the JIT guidance's test). */
int jvm_names_walked(const struct jvm_names *jn, pid_t pid);

#endif
