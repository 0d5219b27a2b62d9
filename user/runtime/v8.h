/* V8 (Node.js) among the recorded processes: recognized from their binary
 * (node, or a libnode.so, by any name) that exports V8's postmortem
 * metadata (v8dbg_* constants), never from a file name. The layout the BPF
 * step (bpf/runtime/v8.bpf.c) and the naming read by comes from those constants,
 * read from the binary (formats/v8_meta.c); a build whose metadata lacks
 * one is refused with one line naming it, and its frames stay native.
 *
 * JavaScript frames are named from the process's heap when their samples
 * are drained: the frame's SharedFunctionInfo, checked to be one still
 * and the one sampled (its function_data against the frame's cookie: the
 * GC moves objects, and a stale pointer gives no name rather than a wrong
 * one), its name (the ScopeInfo's of a compiled function), its Script's
 * name. Strings through formats/v8_string.c. Everything read is hostile. */
#ifndef USER_V8_H
#define USER_V8_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "bpf/runtime/v8.h"

struct v8;
struct v8_proc;

int v8_new(struct v8 **out);
void v8_free(struct v8 *v);

/* The process's V8, from the text of its /proc/PID/maps. 0 and *out;
 * -ENOENT when it runs none; -ENOTSUP when its metadata lacks what the
 * step needs (warned once per binary, naming it); -errno. */
int v8_attach_maps(struct v8 *v, pid_t pid, const char *maps_text, size_t len,
		   struct v8_proc **out);
void v8_forget(struct v8 *v, pid_t pid);
void v8_proc_bpf(const struct v8_proc *p, struct v8_bpf_proc *out);

/* A JavaScript function as read from the process: names sanitized. */
struct v8_function {
	const char *name; /* "<anonymous>" for a function with none */
	const char *file; /* the script's name (a path or URL), or NULL */
	int start_line;	  /* the line of its bytecode's first position, or 0 */
	int line;	  /* the frame's line (an interpreted frame's), or 0 */
};

/* The function of one recorded frame (its two words): 0 and *out (valid
 * until the next call for the process), or -ESTALE when the object is no
 * longer the one sampled, -errno when unreadable. */
int v8_frame_function(struct v8_proc *p, uint64_t addr, uint64_t info, struct v8_function *out);

/* Frames an optimized frame stands for, at most. */
#define V8_INLINE_MAX 32

/* One function of an optimized frame: its SharedFunctionInfo and where it
 * is in its script. */
struct v8_inlined {
	uint64_t sfi;
	int32_t script_offset;
};

/* The functions an optimized frame at pc (a return address unless leaf)
 * stands for, the one recorded (sfi) with those Turbofan inlined into it:
 * innermost first, sfi last. Their number (> 0) into out; -ENOENT when pc
 * is in no InstructionStream (or no optimized code: no inlining data),
 * -ESTALE when its code is not sfi's, -ENOTSUP when the binary's metadata
 * does not say where, -EINVAL on anything malformed, -errno. */
int v8_frame_inlined(struct v8_proc *p, uint64_t sfi, uint64_t pc, bool leaf,
		     struct v8_inlined *out, int max);

/* The function sfi (one v8_frame_inlined gave) at script_offset: 0 and *out
 * (valid until the next call for the process), or -errno. */
int v8_inlined_function(struct v8_proc *p, const struct v8_inlined *f, struct v8_function *out);

#endif
