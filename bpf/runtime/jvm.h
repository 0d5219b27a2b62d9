/* The HotSpot (OpenJDK) frame walk: what user space (user/runtime/jvm.c) tells the
 * BPF walk (bpf/runtime/jvm.bpf.c) of a JVM process, and what the walk records of
 * each Java frame. Every offset comes from the JVM's own serviceability
 * tables (gHotSpotVMStructs and its siblings, read from the running process
 * by user/runtime/jvm.c through formats/jvm_tables.c), none is compiled in: a JVM
 * of another version is walked or refused, naming what it lacks.
 *
 * Compiled Java code keeps no frame pointer (rbp is a general register
 * unless -XX:+PreserveFramePointer), so frames in the code cache are
 * stepped by what HotSpot knows of them, as its own frame::sender does:
 * the CodeBlob of a pc is found through its CodeHeap's segment map, and
 *   - an nmethod (compiled Java) is unwound by the blob's frame size (its
 *     prologue and epilogue by the instructions there);
 *   - the interpreter's frames by rbp, the Method* and bytecode pointer
 *     read from their slots (the leaf's bytecode pointer from r13, where
 *     the template interpreter keeps it while it runs);
 *   - stubs, adapters and the call stub by their frame size or rbp, back
 *     into the VM's native frames (JavaCalls::call_helper), which the CFI
 *     walk goes on with. */
#ifndef BPF_JVM_H
#define BPF_JVM_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define JVM_HEAPS 4 /* CodeHeaps: non-nmethods, profiled, non-profiled (a segmented cache) */

/* The first 4 bytes of a CodeBlob's _name (little-endian), which say what
 * it is: HotSpot's names, as its own tools print them. */
#define JVM_NAME_NMETHOD 0x74656d6e /* "nmethod" */
#define JVM_NAME_NATIVE	 0x6974616e /* "native nmethod" */
#define JVM_NAME_INTERP	 0x65746e49 /* "Interpreter" */
#define JVM_NAME_VTABLE	 0x62617476 /* "vtable chunks" */
#define JVM_NAME_ITABLE	 0x62617469 /* "itable stub" (hand-written ones) */
#define JVM_NAME_STUBS	 0x62757453 /* "StubRoutines (1)", "(2)": never freed */

struct jvm_bpf_proc {
	struct {
		__u64 lo, hi; /* the heap's reserved code: [lo, hi) */
		__u64 segmap; /* its segment map: a byte a segment */
	} heap[JVM_HEAPS];
	__u64 cc_lo, cc_hi; /* the whole code cache (CodeCache::_low_bound, _high_bound) */
	__u32 nheaps;
	__u32 seg_shift;  /* log2 of the segment size (CodeHeap::_log2_segment_size) */
	__u32 block_size; /* sizeof(HeapBlock): the blob follows its header */
	/* CodeBlob */
	__u16 cb_name, cb_size, cb_frame_complete, cb_frame_size, cb_code_begin, cb_code_end;
	/* CompiledMethod / nmethod */
	__u16 nm_method, nm_deopt, nm_orig_pc, nm_compile_id;
	/* Method, ConstMethod */
	__u16 m_const, cm_size; /* cm_size: sizeof(ConstMethod), where its bytecodes start */
	/* The interpreter frame's slots, in words from rbp (frame_x86.hpp):
	 * sender sp, Method*, bytecode pointer. */
	__s16 if_sender_sp, if_method, if_bcp;
	/* An interpreted frame's token (JVM_FRAME_OFF's high half,
	 * jvm_token): read through ConstMethod::_constants and, in the 32
	 * bytes from it, _name_index, _code_size, _flags and
	 * _constMethod_size; the pool's _source_file_name_index (in its first
	 * 64 bytes) and slots (after sizeof(ConstantPool)); the Symbols'
	 * _hash_and_refcount; and the line table after the bytecodes
	 * (_flags' lines_flag says it is there). sym_hash JVM_NO_TOKEN: none
	 * read. */
	__u16 cm_constants, cm_name_index, cm_code_size, cm_flags, cm_words;
	__u16 cp_size, cp_source_file, sym_hash, lines_flag;
	__u16 pad[3];
};
#define JVM_NO_TOKEN 0xffff

/* An interpreted frame's token, 16 bits: what the BPF walk reads of its
 * method while the frame runs (bpf/runtime/jvm.bpf.c's method_token) and
 * user space reads again when it names it (user/runtime/jvm_method.h's
 * jvm_method_ids), which must agree. A class unloaded has its memory taken
 * by the next classes loaded, at the very same addresses (JChurn's two
 * Workers), and its Symbols' by the next names made; what tells the two
 * apart: the hashes of the Symbols of the method's name and its class's
 * file (random at each Symbol's making: the high 16 bits of
 * _hash_and_refcount; 0 for no file), its code size and the first 8 bytes
 * of its line table (those in the ConstMethod; 0 for none): a shared name
 * ("run") in a same-named class differs in its lines. */
static inline __u32 jvm_token(__u32 name_hash, __u32 file_hash, __u32 code_size, __u64 lines)
{
	__u64 h = (__u64)(name_hash & 0xffff) << 48 | (__u64)(file_hash & 0xffff) << 32 |
		  (code_size & 0xffff);

	h ^= lines * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (__u32)(h >> 48);
}

/* The first n (at most 8) bytes of a little-endian word: a line table's
 * bytes that lie in its ConstMethod, as both sides take them. */
static inline __u64 jvm_token_bytes(__u64 w, __u64 n)
{
	return n >= 8 ? w : w & ((1ULL << (8 * n)) - 1);
}

/* A Java frame as recorded, two words, after the sample's Python frames
 * (bpf/events.h's njvm). */
struct jvm_bpf_frame {
	/* JVM_FRAME_ADDR: a Method* (interpreted) or the CodeBlob (compiled,
	 * a stub); JVM_FRAME_INDEX: the user ip it names (0: the leaf). */
	__u64 addr;
	/* JVM_FRAME_KIND, JVM_FRAME_COOKIE: what the frame saw, for user
	 * space to check that the object is still the one sampled (the
	 * nmethod's compile id, the ConstMethod's address >> 3);
	 * JVM_FRAME_OFF: the bytecode index (low 16 bits) and the method's
	 * token (high 16: JVM_FRAME_TOKEN), or the pc's offset in the code. */
	__u64 info;
};
#define JVM_FRAME_ADDR(w)   ((w) & ((1ULL << 48) - 1))
#define JVM_FRAME_INDEX(w)  ((__u32)((w) >> 48))
#define JVM_FRAME_KIND(w)   ((__u32)((w) >> 56))
#define JVM_FRAME_COOKIE(w) ((__u32)((w) >> 32) & 0xffffff)
#define JVM_FRAME_OFF(w)    ((__u32)(w))
#define JVM_FRAME_BCI(w)    ((__u32)(w)&0xffff)
#define JVM_FRAME_TOKEN(w)  ((__u32)(w) >> 16)
/* An interpreted frame's cookie: its ConstMethod's address, as the walk
 * records it and user space checks it (one definition for both). */
#define JVM_CM_COOKIE(cm)	((__u32)((cm) >> 3) & 0xffffff)
#define JVM_FRAME_INFO(k, c, o) ((__u64)(k) << 56 | ((__u64)(c)&0xffffff) << 32 | (__u32)(o))

enum jvm_frame_kind {
	JVM_KIND_INTERP = 1,   /* addr: Method*; off: bci (0xffff: unknown) */
	JVM_KIND_COMPILED = 2, /* addr: nmethod; off: pc - code begin; cookie: compile id */
	JVM_KIND_LEAF = 3,     /* a compiled frame at the sample's pc (not a return address) */
	JVM_KIND_NATIVE = 4,   /* a native method's wrapper; as COMPILED */
	JVM_KIND_STUB = 5,     /* any other blob; addr: the blob, named by its _name */
};

/* Frames a sample records at most: a power of 2 (the index is masked). */
#define JVM_BPF_FRAMES 1024
/* Interpreted frames stepped in one jvm_unwind call, their records at one
 * ip index (bpf/runtime/jvm.bpf.c). */
#define JVM_INTERP_RUN	8
#define JVM_SLOT_SAMPLE 0
#define JVM_SLOT_SWITCH 1
/* How far the segment map is followed back to a blob's first segment
 * (HotSpot's own bound: a hop is at most 0xfe segments). */
#define JVM_SEGMAP_HOPS 16
/* Words above an nmethod's frame searched for its return address: x86
 * compiled code may leave words beyond the frame size (as async-profiler
 * and the OpenTelemetry profiler search). */
#define JVM_RA_SEARCH 6
#define JVM_BLOB_READ 320 /* bytes of a CodeBlob read: an nmethod's header fields */

/* Blobs found, kept per CPU across frames and samples (struct
 * jvm_bpf_step's bcache), by the pc they were found for: a recursion's
 * frames and a loop's call sites return through the same pcs, and each is
 * then a lookup here, not a segment map walk and two reads. An entry is
 * taken for JVM_BCACHE_NS after it was read: a blob freed and its memory
 * reused by another within that time is stepped by the old one's frame
 * size, which can cut or garble that stack (its names are checked again in
 * user space: never a wrong name). */
#define JVM_BCACHE_BITS 6
#define JVM_BCACHE_NS	(20 * 1000 * 1000ULL)
/* ... and for a blob that is never freed (the interpreter's, StubRoutines'):
 * the bound is then a process gone and its pid reused. */
#define JVM_BCACHE_PERM_NS (1000 * 1000 * 1000ULL)
#define JVM_BLAST	   2 /* blobs kept by range (struct jvm_bpf_step's blast; 2: jvm_bcache_find) */
struct jvm_bcache_ent {
	__u64 pc, t;		       /* the pc it was found for, and when (0: empty) */
	__u64 blob, begin, end, deopt; /* the CodeBlob, its code, an nmethod's deopt handler */
	__u32 tgid, name;	       /* the process; its _name's first 4 bytes */
	__s32 fsize, complete, orig_pc, cookie; /* frame size, frame complete, nmethod's */
};

/* Each interpreted frame's Method*'s ConstMethod (where its bytecodes
 * start) and token, kept per CPU as bcache is, by the Method*: a
 * recursion's interpreted frames, and the callers every sample of a loop
 * returns through, read them once a JVM_BCACHE_NS, not once a frame (a
 * read of 8 bytes, ~125 ns, was most of an interpreted frame's cost). A
 * Method* freed and reused within that time gives the frame a bytecode
 * index of 0xffff, or a cookie or token user space refuses: an unnamed
 * frame, never a wrong name. */
#define JVM_MCACHE_BITS 3
struct jvm_mcache_ent {
	__u64 method, cm, t; /* the Method*, its ConstMethod, when read (0: empty) */
	__u32 tgid, token;
};

/* One step's state (a jvm_scratch slot): the frame's registers in, the
 * caller's out. */
struct jvm_bpf_step {
	__u64 pc, sp, bp;
	__u64 r13;	 /* the leaf's (the interpreter's bytecode pointer) */
	__u32 tgid, tid; /* the walked thread's (cfi_jvm sets tgid at each frame) */
	__u32 index;	 /* the frame's user ip index */
	__u32 leaf;	 /* pc is exact (the sample's, or a signal's), not a return address */
	__u32 n;	 /* frames recorded */
	__u32 truncated;
	struct jvm_bpf_frame frames[JVM_BPF_FRAMES];
	__u8 blob_buf[JVM_BLOB_READ];
	/* Words of stack read: here, not on the BPF stack, which the walkers
	 * that call the step (and their bpf_loop callbacks) share. */
	__u64 w[16];
	/* method_token's: a constant pool's first bytes, and what it has
	 * read (here, not in registers the caller's stack would keep). */
	__u8 cp_head[64];
	__u64 tk_cm, tk_lines;
	__u32 tk_words, tk_hn, tk_hs;
	__u16 tk_ni, tk_code_size, tk_flags, tk_sfi;
	/* The step's own values, for the same reason. */
	__u64 blob, begin, end, addr, deopt;
	__u32 name, kind, cookie, off, partial;
	__s32 fsize, complete, orig_pc, compile_id;
	__u64 bt;		/* when the blob was read (bcache) */
	struct jvm_bpf_proc pr; /* the process's, copied at the walk's first Java frame */
	__u32 pr_tgid;		/* whose pr is */
	__u64 now;		/* the walk's start, for bcache */
	/* Stack read beyond the words asked for, to the end of their page:
	 * the frames above are read from here (the walk goes up the stack),
	 * one read a page, not one a frame. [win_lo, win_lo + win_len), reset
	 * at each walk's first Java frame. */
	__u64 win_lo;
	__u32 win_len;
	__u8 win[4096];
	__u32 stat; /* jvm_stats' key */
	struct jvm_bcache_ent bcache[1 << JVM_BCACHE_BITS];
	struct jvm_mcache_ent mcache[1 << JVM_MCACHE_BITS];
	/* The last blobs read, found by range for a pc bcache has not seen
	 * (a leaf's: a loop's samples land on many pcs of one nmethod, and
	 * each was a blob read, ~0.7 us, at most samples); their t the
	 * read's, so that an entry filled from them is no younger than it. */
	struct jvm_bcache_ent blast[JVM_BLAST];
	__u32 blast_next;
};

enum jvm_bpf_stat {
	JVM_STAT_FRAMES,     /* Java frames stepped */
	JVM_STAT_NO_BLOB,    /* a pc in the code cache in no blob (free, or being made) */
	JVM_STAT_BAD_FRAME,  /* a frame's registers or slots not sane: the walk stopped */
	JVM_STAT_READ_FAULT, /* a read failed */
	JVM_STAT_TRUNCATED,  /* more than JVM_BPF_FRAMES Java frames */
	JVM_STAT_NR,
};

/* jvm_unwind's results. */
enum { JVM_STEP_OK = 0, JVM_STEP_NOT_JAVA = 1, JVM_STEP_FAIL = 2 };

#endif
