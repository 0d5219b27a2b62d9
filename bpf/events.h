/* Records that BPF pushes into the ring buffer, shared by bpf/ and user/.
 * Every record starts with struct ev_hdr; records vary in length, so the ring
 * buffer carries no dead bytes. */
#ifndef BPF_EVENTS_H
#define BPF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define COMM_LEN   16
#define MAX_FRAMES 127 /* kernel frames, as bpf_get_stack's sysctl default */
/* User frames: --max-stack's default and ceiling. The default walks a
 * recursion, a parser or python's start-up imports (past 127 native
 * frames) to its root; a record grows only with the frames it holds. The
 * ceiling: a 1500-deep Python recursion on 3.8 is three native frames a
 * level (4,500 with its Python frames named in place of the evaluation
 * loop's: --max-stack counts the frames of the stack shown). */
#define MAX_STACK_DEFAULT 1024
#define MAX_USER_STACK	  8192
#define MAX_STACK_COPY	  65528 /* bytes of user stack, as perf's --call-graph dwarf limit */
/* Bytes of user stack copied from sp at each sample, the walks' first
 * window (most frames' records of a shallow stack lie in them); sent only
 * when the stack is copied for DWARF. */
#define WALK_COPY 512
/* The same for the CFI walk, which goes to the root: most shallow stacks
 * (gzip's ~7 frames: ~1.5 KB) end within it, so that the walk reads no
 * window beyond it (bpf/sample.bpf.c: one read; docs/benchmarks.md). */
#define CFI_WALK_COPY 2048

enum ev_type {
	EV_SAMPLE = 1,	/* struct ev_sample */
	EV_EXEC = 2,	/* struct ev_task: a recorded process called exec */
	EV_FORK = 3,	/* struct ev_task: a recorded process forked a new process */
	EV_EXIT = 4,	/* struct ev_task: a recorded process's last thread exited */
	EV_CALL = 5,	/* struct ev_call: a traced function's entry or return (-t) */
	EV_MIGRATE = 6, /* struct ev_hdr: thread tid of pid moves to cpu */
	EV_VMA = 7,	/* struct ev_vma: an executable file mapping of an exiting process */
	/* --off-cpu (bpf/offcpu.bpf.c): */
	EV_OFFCPU_STACK = 8, /* struct ev_sample: a new off-CPU stack, its id in stack_id */
	EV_OFFCPU = 9,	     /* struct ev_offcpu: one wait, for the XRay timelines */
	/* -t usdt:... (bpf/usdt.bpf.c): */
	EV_USDT = 10,	  /* struct ev_usdt: a USDT probe fired */
	EV_USDT_STR = 11, /* struct ev_usdt_str: a string argument, first seen */
	/* --heap (bpf/heap.bpf.c): */
	EV_HEAP_ALLOC = 12, /* struct ev_heap: a sampled allocation and its stack */
};

struct ev_hdr {
	__u32 type;
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;     /* bpf_get_smp_processor_id() */
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

/* flags of struct ev_sample (16 bits) */
/* (1u << 0), (1u << 1), (1u << 3): unused (bpf_get_stack's errors and a
 * short stack copy, which no reader took: the errors are counted in stats,
 * and a copy's length is stack_len) */
#define SAMPLE_IN_KERNEL (1u << 2) /* the interrupted context was kernel mode */
#define SAMPLE_DWARF	 (1u << 4) /* the stack was copied for DWARF unwinding */
/* (1u << 5): unused (the leaf-caller fix's hint, gone with the fix) */
/* The CFI walk (bpf/cfi_walk.bpf.h, rodata cfi_walk): the nuser ips are its
 * frames. With SAMPLE_CFI_END it reached a CFI_ROW_END row (the thread's
 * root: _start, clone) or a return address of 0; with SAMPLE_CFI_TRUNC it
 * stopped before (an unreadable word, a frame that does not move up the
 * stack, a frame-pointer fallback that found no frame, MAX_FRAMES);
 * SAMPLE_CFI_NOTABLE: it met a process or a mapping whose table is not
 * loaded, and the stack was copied for DWARF too (SAMPLE_DWARF: user space
 * unwinds the copy; the ips, walked on by frame pointers from there, are
 * what it takes when the copy cannot be unwound). A CFI-walked
 * sample carries a stack copy only with SAMPLE_DWARF; a CFI-walked
 * EV_OFFCPU_STACK without it carries the walk's first window (the words
 * user space finds its place's return addresses in, struct offcpu_sig). */
#define SAMPLE_CFI	   (1u << 6)
#define SAMPLE_CFI_END	   (1u << 7)
#define SAMPLE_CFI_TRUNC   (1u << 8)
#define SAMPLE_CFI_NOTABLE (1u << 9)
/* The user stack was cut at --max-stack frames: user space ends it with a
 * frame named [truncated]. */
#define SAMPLE_MAX_STACK (1u << 10)
/* With SAMPLE_DWARF: the stack copy and uregs are not the leaf's but those
 * of the user frame after the first dwarf_at ips (the CFI walk met no
 * table there), and uregs[UREG_IP] is that frame's lookup address (its
 * return address - 1): user space keeps the dwarf_at ips the walk found
 * and unwinds the copy from that frame on. */
#define SAMPLE_DWARF_AT (1u << 11)
/* The thread's Python frames (npython of them, bpf/runtime/python.bpf.c) are not
 * all there: deeper than PY_BPF_FRAMES, or a frame not readable. */
#define SAMPLE_PY_TRUNC (1u << 12)
/* The thread's Java frames (njvm of them, bpf/runtime/jvm.bpf.c) are not all
 * there: more than JVM_BPF_FRAMES. */
#define SAMPLE_JVM_TRUNC (1u << 13)
/* Its JavaScript frames (nv8 of them, bpf/runtime/v8.bpf.c) are not all there:
 * more than V8_BPF_FRAMES. */
#define SAMPLE_V8_TRUNC (1u << 14)

/* User registers the unwinders need, x86_64. */
enum { UREG_IP, UREG_SP, UREG_BP, UREG_NR };

struct ev_sample {
	struct ev_hdr hdr;
	char comm[COMM_LEN]; /* the thread's */
	__u16 nkernel;	     /* kernel frames, leaf first */
	__u16 nuser;	     /* user frames (frame-pointer walk), leaf first */
	__u16 flags;
	/* With SAMPLE_DWARF_AT (above); not in a union with stack_id: an
	 * off-CPU stack walked by CFI has both. */
	__u16 dwarf_at;
	__u32 stack_len; /* bytes of user stack copied from uregs[UREG_SP] */
	__u32 stack_id;	 /* EV_OFFCPU_STACK: the id the waits of this stack carry */
	/* The sampled thread's Python frames, innermost first: two words
	 * each (struct py_bpf_frame, bpf/runtime/python.h), after the user ips. */
	__u16 npython;
	/* Its Java frames (struct jvm_bpf_frame, bpf/runtime/jvm.h): two words each,
	 * after the Python frames; each names one of the user ips. */
	__u16 njvm;
	/* Its JavaScript frames (struct v8_bpf_frame, bpf/runtime/v8.h): two words
	 * each, after the Java frames; each names one of the user ips. */
	__u16 nv8;
	__u16 pad;
	__u64 uregs[UREG_NR]; /* zero for kernel threads */
	/* nkernel kernel ips, nuser user ips, 2 * npython words of Python
	 * frames, 2 * njvm words of Java frames, 2 * nv8 words of JavaScript
	 * frames, then stack_len bytes */
	__u64 ips[];
};

#ifndef __bpf__
/* Words of a sample record before its stack copy. */
static inline size_t ev_sample_ips(const struct ev_sample *s)
{
	return (size_t)s->nkernel + s->nuser + 2 * (size_t)s->npython + 2 * (size_t)s->njvm +
	       2 * (size_t)s->nv8;
}
#endif

struct ev_task {
	struct ev_hdr hdr; /* pid: the process (for EV_FORK, the parent) */
	__u32 child_pid;   /* EV_FORK */
	__u32 pad;
	char comm[COMM_LEN];
};

/* EV_EXEC's record: the task's, and the file exec'd, by its identity and
 * the path given to exec: a process that exits before user space reads its
 * maps has its executable found by that path, as its exit-time mappings
 * (struct ev_vma) name a file by its inode and bare name only. */
#define EXEC_PATH_LEN 256
struct ev_exec {
	struct ev_task task;
	__u64 ino;
	__u32 dev_major, dev_minor; /* as in /proc/PID/maps */
	char path[EXEC_PATH_LEN];   /* bprm->filename: absolute, or the exec's cwd's */
};

#define VMA_NAME_LEN 64

/* Sent for each executable file mapping of a process as its last thread
 * exits, before its address space goes: what perf's MMAP2 records give, for
 * a process that exits before user space has read its maps. */
struct ev_vma {
	struct ev_hdr hdr;
	__u64 start, end, offset; /* offset: in the file */
	__u64 ino;
	__u32 dev_major, dev_minor; /* as in /proc/PID/maps */
	char name[VMA_NAME_LEN];    /* the file's name, without its directory */
};

#define MAX_TRACE_ARGS 6

enum call_kind { CALL_ENTRY = 0, CALL_EXIT = 1 };
/* Flag of ev_call.kind: kernels without bpf_get_attach_cookie (before 5.15)
 * send func_id 0; an entry then carries the probed address after its
 * arguments (args[nargs], not counted in nargs), and an exit is the
 * thread's innermost open call. */
#define CALL_IP	       0x80
#define CALL_KIND_MASK 0x7f

/* Variable length: only nargs args (and the CALL_IP address) are sent. */
struct ev_call {
	struct ev_hdr hdr;
	__u32 func_id; /* the probe's BPF cookie: an XRay function id; 0: see CALL_IP */
	__u8 kind;     /* enum call_kind, | CALL_IP */
	__u8 nargs;
	__u16 pad;
	__u64 args[MAX_TRACE_ARGS];
};

/* USDT probes (-t usdt:BIN:PROBES, user/usdt.c). Each probe's cookie
 * (bpf_usdt_cookie) says which probe it is (user space's index), how many
 * arguments to record and which of them are strings (char *) to read. */
#define USDT_COOKIE_PROBE(c) ((__u32)((c)&0xffffff))
#define USDT_COOKIE_STRS(c)  ((__u32)(((c) >> 24) & 0x3f)) /* bit i: argument i */
#define USDT_COOKIE_NARGS(c) ((__u32)(((c) >> 32) & 0xf))
#define USDT_COOKIE(probe, strs, nargs)                                                            \
	((__u64)(probe) | (__u64)(strs) << 24 | (__u64)(nargs) << 32)

/* Sent whole (bpf/usdt.bpf.c says why); only nargs args are meant, and a
 * record that ends after them is read as well. A string argument is sent
 * as its pointer; its text came before, once, as an ev_usdt_str. */
struct ev_usdt {
	struct ev_hdr hdr;
	__u32 probe; /* USDT_COOKIE_PROBE */
	__u16 nargs;
	__u16 pad;
	/* The thread's: names a process seen first here (under -a, one that
	 * fired probes and exited between samples). */
	char comm[COMM_LEN];
	__u64 args[MAX_TRACE_ARGS];
};

/* A string argument's text, sent the first time its (process, pointer,
 * first 8 bytes) is seen: a name (Python's file and function) is read once
 * per distinct pointer, and a pointer reused for another string whose first
 * bytes differ is read again. Variable length: len bytes of s (at most
 * USDT_STR_LEN - 1, NUL-terminated); truncated says the string went on. */
#define USDT_STR_LEN 256
struct ev_usdt_str {
	struct ev_hdr hdr;
	__u64 ptr;
	__u64 head; /* its first 8 bytes, as read */
	__u32 len;  /* bytes of s, with its NUL */
	__u32 truncated;
	char s[USDT_STR_LEN];
};

/* Off-CPU waits (--off-cpu): a thread of a recorded process leaves the CPU
 * blocked (its state not TASK_RUNNING: a sleep, a lock, I/O) or preempted
 * (still runnable). Its stack is taken as it leaves; the wait ends when it
 * runs again. Waits are summed in BPF by (tgid, tid, stack, kind) in the
 * offcpu_sums0/1 maps; user space drains them every 0.2 s. */
enum offcpu_kind { OFFCPU_BLOCKED = 0, OFFCPU_PREEMPTED = 1 };

/* Identity of an off-CPU stack for the dedupe: a thread blocking again with
 * the same key is taken to have the same stack, and is not walked again.
 * User tasks: the user ip, sp and bp, the system call, the kind and the
 * words of the user stack that may be return addresses (uhash: user code
 * addresses in the OFFCPU_UWIN bytes above sp, and the return addresses of
 * the first OFFCPU_FP frame records from bp). Kernel threads: their whole
 * kernel stack's id. What is still taken as one (the first seen): two call
 * paths that differ only above the window and the frame records walked
 * (code without frame pointers more than OFFCPU_UWIN bytes of stack up),
 * with the same sp, bp and words in the window; one system call blocking
 * at two places in the kernel from the same user stack (a read of a pipe
 * that faults on its buffer: the user stack is right, the kernel frames
 * are the first's); and two different hashes colliding (64 bits). */
#define OFFCPU_UWIN 256
#define OFFCPU_FP   4
struct offcpu_stack_key {
	__u32 tgid;
	/* User tasks: the system call (orig_ax; -1 outside one); kernel
	 * threads: bpf_get_stackid of the kernel stack, or its error. */
	__s32 kstack;
	__u64 ip, sp, bp;
	__u64 uhash;
	__u32 kind, pad;
};

/* Where the user stack of a place (tgid, ip, sp, bp) keeps its return
 * addresses: the word offsets from sp of the first OFFCPU_SIG_MAX frames'
 * return addresses within OFFCPU_SIGWIN bytes, found by user space in the
 * first stack unwound there (offcpu_sigs map). Once a place has one, its
 * offcpu_stack_key's uhash is a hash of those words alone (pad 1), not of
 * every word that looks like code: a heap pointer in a local no longer
 * makes the same stack a new key, and two call paths still differ by
 * their return addresses. */
#define OFFCPU_SIG_MAX 32
#define OFFCPU_SIGWIN  2048
struct offcpu_sig_key {
	__u32 tgid, pad;
	__u64 ip, sp, bp;
};
struct offcpu_sig {
	__u32 n;   /* offsets */
	__u32 len; /* bytes from sp that hold them */
	__u16 off[OFFCPU_SIG_MAX];
};

/* Key and value of offcpu_sums0/1. stack: an EV_OFFCPU_STACK's stack_id,
 * or 0 when its record was lost (and in offcpu_tsums0/1). */
struct offcpu_key {
	__u32 tgid, tid, stack, kind;
};
struct offcpu_val {
	__u64 ns, count;
};

/* A thread's wait in progress (offcpu_start map, by tid). switches: the
 * task's context switches (nvcsw + nivcsw) as it left: a start whose thread
 * switched since without the program seeing it is stale, and dropped. The
 * waits still open at the stop are counted up to it from here. */
struct offcpu_start {
	__u64 ts, switches;
	__u64 runtime; /* the thread's CPU time then (se.sum_exec_runtime) */
	__u32 stack, kind;
	__u32 tgid, pad;
};

/* A thread already off the CPU as the recording starts (the BPF task
 * iterator offcpu_sleepers, written to its seq file): its wait counts from
 * the start, under stack id; user space copies its user stack from sp and
 * sends it on as that id's EV_OFFCPU_STACK. */
struct offcpu_sleeper {
	__u32 tgid, tid, id, kind;
	__u64 uregs[UREG_NR]; /* zero for kernel threads */
	char comm[COMM_LEN];
	__u32 nkernel, pad;
	__u64 ips[MAX_FRAMES]; /* nkernel kernel ips written */
};

/* With XRay timelines: one per wait of at least --off-cpu-min. hdr: the
 * thread, the CPU it came back on and the wait's end. */
struct ev_offcpu {
	struct ev_hdr hdr;
	__u64 start_ns;
	__u32 stack, kind;
};

/* Value of the lost_by_pid map: samples of a process the ring buffer could
 * not take, and the comm of the first, which names a process that only
 * lost samples and is gone by the end. */
struct lost_val {
	__u64 count;
	char comm[COMM_LEN];
};

/* Indices of the per-CPU counter array `stats`. */
enum stat_idx {
	STAT_LOST,	/* samples the ring buffer could not take */
	STAT_LOST_TASK, /* task events the ring buffer could not take */
	STAT_KSTACK_ERR,
	STAT_USTACK_ERR,
	STAT_CALLS,	    /* traced calls and returns of recorded tasks */
	STAT_LOST_CALLS,    /* ... that the ring buffer could not take */
	STAT_KERNEL_WALKS,  /* user stacks walked by bpf_get_stack (deep, compat or traced) */
	STAT_EXIT_NO_MM,    /* last threads that exited with their memory map gone (< 6.16) */
	STAT_EXIT_VMA_BUSY, /* ... whose mappings the VMA iterator could not take (EBUSY) */
	/* The CFI walk: */
	STAT_CFI_WALKS,		 /* samples walked by it */
	STAT_CFI_END,		 /* ... that reached the root (SAMPLE_CFI_END) */
	STAT_CFI_TRUNC,		 /* ... that stopped early (SAMPLE_CFI_TRUNC) */
	STAT_CFI_NOTABLE,	 /* ... that met a mapping without a table (SAMPLE_CFI_NOTABLE) */
	STAT_CFI_FP_NOMAP,	 /* frames stepped by frame pointer: pc in no mapping (JIT, anon) */
	STAT_CFI_FP_NONE,	 /* ... pc in a CFI_ROW_NONE row (no FDE) */
	STAT_CFI_FP_FALLBACK,	 /* ... pc in a CFI_ROW_FALLBACK row */
	STAT_CFI_READ_ERR,	 /* walks stopped by an unreadable stack word */
	STAT_CFI_NO_PROG,	 /* the walker's tail call failed (cfi_progs not filled) */
	STAT_CFI_URETPROBE_MISS, /* uretprobe trampolines found in no return_instance */
	STAT_CFI_BY_FILE,	 /* mappings found by their file (cfi_files), not the trie */
	/* --off-cpu: */
	STAT_OFFCPU_SWITCHES,	 /* recorded threads that left the CPU */
	STAT_OFFCPU_WAITS,	 /* ... and came back: waits measured */
	STAT_OFFCPU_SHORT,	 /* waits under --off-cpu-min, left out */
	STAT_OFFCPU_SHORT_NS,	 /* ... their total time */
	STAT_OFFCPU_STACKS,	 /* new stacks walked and sent (EV_OFFCPU_STACK) */
	STAT_OFFCPU_LOST_STACKS, /* ... that the ring buffer could not take */
	STAT_OFFCPU_LOST,	 /* waits lost: the sums' maps and the thread's were full */
	STAT_OFFCPU_STALE,	 /* waits dropped: a switch of the thread was not seen */
	STAT_OFFCPU_LOST_NS,	 /* ... STAT_OFFCPU_LOST's total time */
	STAT_OFFCPU_THREAD_ONLY, /* waits counted under their thread only: sums full */
	STAT_OFFCPU_THREAD_ONLY_NS,
	STAT_OFFCPU_LOST_EVENTS, /* EV_OFFCPU not taken: the wait is missing from the timeline */
	STAT_OFFCPU_LOST_STARTS, /* offcpu_start full: a wait not measured */
	STAT_OFFCPU_SLEEPERS,	 /* threads found off the CPU at the start */
	STAT_OFFCPU_CFI,	 /* new stacks whose user part the CFI walk walked */
	STAT_OFFCPU_CFI_NOTABLE, /* ... that met a mapping without a table (copied for DWARF) */
	STAT_OFFCPU_UNSEEN,    /* waits whose end no switch program saw: ended at the next leave */
	STAT_OFFCPU_UNSEEN_NS, /* ... their total time */
	/* -t usdt: */
	STAT_USDT_FIRED,     /* probes of recorded processes that fired */
	STAT_USDT_LOST,	     /* ... that the ring buffer could not take */
	STAT_USDT_STRS,	     /* strings read and sent */
	STAT_USDT_STR_FAULT, /* string arguments that could not be read */
	STAT_NR,
};

/* --heap (bpf/heap.bpf.c, user/heap.c): the allocator's functions, each
 * probe's BPF cookie. */
enum heap_func {
	HEAP_MALLOC,
	HEAP_CALLOC,
	HEAP_REALLOC,
	HEAP_REALLOCARRAY,
	HEAP_FREE,
	HEAP_POSIX_MEMALIGN,
	HEAP_ALIGNED_ALLOC,
	HEAP_MEMALIGN,
	HEAP_VALLOC,
	HEAP_NFUNC,
};

/* A sampled allocation: what it asked for, where it lies, and its stack as
 * a sample's record carries one (s: its own header a copy; no kernel
 * frames; the user stack copied from the caller's registers just after the
 * allocator returned, for DWARF unwinding). seq names it in heap_live. */
struct ev_heap {
	struct ev_hdr hdr;
	__u64 addr, size;
	__u64 seq;
	__u32 func; /* enum heap_func */
	__u32 pad;
	struct ev_sample s;
};

/* heap_live: the sampled allocations not freed yet, by process and address. */
struct heap_live_key {
	__u32 tgid, pad;
	__u64 addr;
};
struct heap_live_val {
	__u64 seq, size;
};

/* heap_stats, a per-CPU array of its own (the sampler's stats stay as they
 * are without --heap). */
enum heap_stat {
	HEAP_STAT_CALLS,     /* allocation calls of recorded processes */
	HEAP_STAT_BYTES,     /* ... the bytes they asked for */
	HEAP_STAT_SAMPLED,   /* ... taken by the byte sampling */
	HEAP_STAT_SENT,	     /* ... and sent with their stacks */
	HEAP_STAT_LOST,	     /* ... that the ring buffer could not take */
	HEAP_STAT_LIVE_FULL, /* ... sent, but not followed to their free: heap_live full */
	HEAP_STAT_FAILED,    /* calls that returned no memory */
	HEAP_STAT_FREES,     /* free() calls (and reallocs' old blocks) */
	HEAP_STAT_FREED,     /* ... of sampled allocations, taken out of heap_live */
	HEAP_STAT_NESTED,    /* allocator calls inside another (reallocarray's realloc) */
	HEAP_STAT_NO_ENTRY,  /* returns whose entry was not seen (probes attached mid-call) */
	HEAP_STAT_NR,
};

#endif
