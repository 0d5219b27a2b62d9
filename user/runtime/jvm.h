/* HotSpot JVMs among the recorded processes: recognized from their binary
 * (a libjvm.so, by any name, that exports the serviceability tables
 * gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMIntConstants and
 * gHotSpotVMLongConstants), never from a file name. Every layout the BPF
 * walk (bpf/runtime/jvm.bpf.c) and the naming below need comes from those tables in
 * the running process (formats/jvm_tables.c); a JVM whose tables lack one is
 * refused with one line naming it, and its frames stay native.
 *
 * Java frames are named from the process's memory when their samples are
 * drained: an interpreted frame's Method* and bytecode index, a compiled
 * frame's nmethod and pc, expanded through its scope descriptors into the
 * methods inlined there (formats/jvm_debuginfo.c), each with the line of its
 * bytecode index from the method's line number table. What the walk saw is
 * checked against what is read (the nmethod's compile id, the Method's
 * ConstMethod): code freed and its address reused, a class unloaded, give
 * no name rather than a wrong one. Everything read is hostile: bounded and
 * checked. */
#ifndef USER_JVM_H
#define USER_JVM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "bpf/runtime/jvm.h"

struct jvm;
struct jvm_proc;

/* The owner of the JVM state of one recording: made in rec_load, held by
 * the recorder. */
int jvm_new(struct jvm **out);
void jvm_free(struct jvm *j);

/* The process's JVM, from the text of its /proc/PID/maps. 0 and *out;
 * -ENOENT when it runs none; -ENOTSUP when its tables lack what the walk
 * needs (warned once per libjvm, naming it); -errno. */
int jvm_attach_maps(struct jvm *j, pid_t pid, const char *maps_text, size_t len,
		    struct jvm_proc **out);
void jvm_forget(struct jvm *j, pid_t pid);
void jvm_proc_bpf(const struct jvm_proc *p, struct jvm_bpf_proc *out);
/* Its version ("17.0.15+6-Debian-1deb12u1"), for messages. */
const char *jvm_proc_version(const struct jvm_proc *p);

/* A Java method as read from the process: names sanitized. */
struct jvm_method {
	const char *name; /* com.example.Foo.bar */
	const char *sig;  /* com.example.Foo.bar(I)J: the pprof system name */
	const char *file; /* com/example/Foo.java, or NULL */
	int first_line;	  /* of its bytecode 0, or 0 */
};

/* One recorded frame as the Java frames it stands for, innermost first
 * (a compiled frame's inlined methods, then its own): each a method and
 * the line of its bytecode index (0: not known). Their number (at most
 * max); -ESTALE when what the address holds now is not what the sample saw
 * (the nmethod unloaded or another's, the method's ConstMethod or name's
 * Symbol another's); 0 when it names nothing else (unreadable). A stub's
 * frame is one method with the blob's name and no file. */
struct jvm_named {
	const struct jvm_method *m;
	int line;
};
int jvm_frame_names(struct jvm_proc *p, uint64_t addr, uint64_t info, struct jvm_named *out,
		    int max);
/* Whether pc lies in the process's code cache. */
bool jvm_in_cache(const struct jvm_proc *p, uint64_t pc);

#endif
