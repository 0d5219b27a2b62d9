/* CPython interpreters in the recorded processes: recognized from their
 * binaries (never from a file name), their code objects read from the
 * process's memory, and their threads' Python frames walked in user space
 * (the oracle of the BPF walk to come, and its base).
 *
 * A binary is a CPython when it defines the symbol _PyRuntime (3.7 on): the
 * executable itself (as Debian builds python3.11, statically) or a
 * libpython3.X.so it maps (pyenv, most distributions). Its version comes
 * from the binary: Py_Version on 3.11 on; before, the minor from the API it
 * exports (Py_BytesMain 3.8, PyFrame_GetCode 3.9, Py_NewRef 3.10) and the
 * whole version from the PY_VERSION string in .rodata when it is there (a
 * prefix ending in the version merges it into the path's tail, as pyenv's
 * do). The layout of its structures (bpf/runtime/python.h) is the generated table
 * for 3.8-3.12, and 3.13 on the _Py_DebugOffsets at the start of
 * _PyRuntime, checked against that table.
 *
 * Everything read from a process is hostile: a binary that only looks like
 * a CPython, memory changed or freed under the reads. Each read is bounded
 * and checked (object types, sizes), and a failure is an error code, never
 * a wrong name. */
#ifndef USER_PYTHON_H
#define USER_PYTHON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "bpf/runtime/python.h"

/* What a binary says of itself. */
struct py_binary {
	int major, minor, micro; /* micro -1: not found */
	uint32_t hexversion;	 /* Py_Version (3.11 on), else 0 */
	/* Link-time addresses (add the load bias). */
	uint64_t runtime, code_type, unicode_type, bytes_type;
	uint64_t eval, eval_size; /* _PyEval_EvalFrameDefault, or 0 */
	struct py_layout layout;
	bool has_layout;
	/* The PT_LOAD segments, for the load bias of a mapping. */
	struct {
		uint64_t vaddr, offset, filesz;
	} loads[8];
	int nloads;
};

/* Reads the ELF file open at fd (name: for messages). 0: a CPython with a
 * layout; -ENOTSUP: a CPython of a version with no layout (b's version is
 * set: a warning names it); -ENOENT: not a CPython (no _PyRuntime);
 * -EINVAL: an ELF that claims to be one but is malformed (its version or
 * _Py_DebugOffsets); -errno of a read. */
int py_binary_read(int fd, const char *name, struct py_binary *b);

/* The owner of the Python state of one recording: made once (in rec_load,
 * held by struct recorder), one struct py_proc per CPython process. */
struct python;
struct py_proc;
int python_new(struct python **out);
void python_free(struct python *py);

/* The process's CPython, found from its mappings (/proc/PID/maps, each
 * file read once per recording by device and inode). 0 and *out; -ENOENT
 * when it runs none; -ENOTSUP when its version has no layout (warned once
 * per version, naming it); -errno. Found again after python_forget (exec,
 * exit). */
int python_attach(struct python *py, pid_t pid, struct py_proc **out);
/* The same from the text of its /proc/PID/maps, read already. */
int python_attach_maps(struct python *py, pid_t pid, const char *maps_text, size_t len,
		       struct py_proc **out);
void python_forget(struct python *py, pid_t pid);
const struct py_binary *py_proc_binary(const struct py_proc *p);
/* Where the process's _PyEval_EvalFrameDefault is, [*lo, *hi); 0, 0 when
 * its binary does not say (no symbol). */
void py_proc_eval(const struct py_proc *p, uint64_t *lo, uint64_t *hi);

/* A code object as read from the process. */
struct py_code {
	uint64_t addr;
	char *name; /* co_qualname (3.11 on) or co_name, UTF-8 */
	char *file; /* co_filename */
	int firstlineno;
	uint8_t *lines; /* the line table's bytes (formats/pyline.h) */
	size_t nlines;
	uint64_t ncode; /* bytes of bytecode */
	uint32_t tag;	/* py_code_tag (bpf/runtime/python.h) of the object read */
};
/* The code object at addr, from the process's cache when the object there
 * is still the one read before (its type, name, qualified name, file and
 * line table pointers, first line and size, and the headers of those
 * strings), else read again. 0 and *out (valid until the next call for
 * this process); -EINVAL: not a code object (a wrong type, a size or a
 * string out of bounds); -EFAULT: memory not readable; -ENOMEM. */
int py_code_get(struct py_proc *p, uint64_t addr, const struct py_code **out);
/* The source line at byte offset off of the code's bytecode: 0 or
 * formats/pyline.h's errors. */
int py_code_line(const struct py_proc *p, const struct py_code *c, int64_t off, int *line);

/* The user-space walk: every thread's Python frames, innermost first. */
#define PY_MAX_FRAMES 1024
struct py_frame {
	uint64_t code; /* the code object's address */
	int64_t lasti; /* byte offset of the instruction */
};
struct py_thread {
	uint64_t tstate;
	uint64_t thread_id; /* pthread_t */
	uint64_t tid;	    /* native_thread_id (3.11 on), else 0 */
	struct py_frame *frames;
	int nframes;
	bool truncated; /* more than PY_MAX_FRAMES, a loop, or a frame not readable */
};
/* A frame as read from memory (its code object, the 8 bytes at
 * frame_lasti, its owner byte): 0 and *f, or 1 for a frame that runs no
 * code (3.12 on, the C stack's shim frames), to be left out, or 2 and *f
 * for the BPF walk's last frame that the thread's state does not link
 * (3.12, PY_OWNER_PENDING: an evaluation call's, entered or left). The walk here
 * and the BPF walk's records (bpf/runtime/python.bpf.c) both go through it. */
int py_frame_decode(const struct py_proc *p, uint64_t code, uint64_t raw, uint8_t owner,
		    struct py_frame *f);
/* The BPF walk's entry of this process in py_procs. */
void py_proc_bpf(const struct py_proc *p, struct py_bpf_proc *out);

/* Calls fn for each thread state of each interpreter (at most 4096).
 * 0, or fn's non-zero return, or -EFAULT/-EINVAL when _PyRuntime's chain
 * is not readable or loops (fn has then seen the threads before). */
typedef int (*py_thread_fn)(const struct py_thread *t, void *ctx);
int python_walk(struct py_proc *p, py_thread_fn fn, void *ctx);

#endif
