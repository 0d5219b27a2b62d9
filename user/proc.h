/* Per-process state built from the event stream: mappings (from
 * /proc/PID/maps, read when the process is first seen and again when an
 * address falls outside them), threads, interned frames and stacks, samples. */
#ifndef USER_PROC_H
#define USER_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "bpf/events.h"
#include "user/util.h"

struct symfile;
struct unwinder;
struct fdr;
struct jit_state;
struct procs;

/* A comm as stored: sanitized (fmt_sanitize), each of its 15 bytes may
 * become a 4-byte escape. */
#define COMM_TEXT_LEN (4 * COMM_LEN)

/* User frames of a stack: --max-stack's ceiling, and the [truncated] frame
 * that ends a stack cut there. */
#define MAX_USER_FRAMES	 (MAX_USER_STACK + 1)
#define MAX_STACK_FRAMES (MAX_FRAMES + MAX_USER_FRAMES)
/* That frame's pc: no address a sample can have (user pcs are below the
 * kernel's half), named [truncated] in every output, so that a reader sees
 * the cut rather than a wrong root. */
#define TRUNCATED_PC UINT64_MAX
/* Pcs from SOURCE_PC_BASE up (below TRUNCATED_PC) are no addresses either:
 * frames a name source put in a stack (its rewrite hook: Python's), which
 * no mapping covers and the source names (its find hook). */
#define SOURCE_PC_BASE (1ULL << 63)

struct mapping {
	uint64_t start, end, offset, inode;
	unsigned dev_major, dev_minor;
	char *path; /* as in maps, " (deleted)" removed, sanitized; "" when anonymous */
	bool exec, deleted;
	bool sym_tried, sym_retried; /* opened for symbols; once more (proc_name_again) */
	struct symfile *sym;	     /* loaded while the process lives, on first use */
	bool referenced;	     /* compact()'s mark: a frame names it */
	uint16_t vdso;		     /* the vdso: its image in procs->vdsos + 1, else 0 */
};

enum frame_kind { FRAME_USER, FRAME_KERNEL };

struct frame {
	uint64_t pc;	     /* lookup address: the ip for a leaf, return address - 1 for callers */
	struct mapping *map; /* user frames: the mapping at pc, or NULL */
	const char *name;    /* function (demangled), NULL when unknown */
	const char *system_name; /* its mangled name, NULL when not mangled */
	uint64_t func;		 /* no name: the function's start (ELF vaddr, by .eh_frame), or 0 */
	const char *module;	 /* kernel module, NULL for the core kernel */
	uint8_t kind;		 /* enum frame_kind */
	bool caller;		 /* pc is a return address - 1 */
};

struct sample {
	uint32_t stack; /* index into proc.stack_off */
	uint32_t tid;
	uint32_t cpu;
	uint32_t count;	  /* 1, or more where procs->aggregate merged samples */
	uint64_t time_ns; /* merged: the first one's */
};

struct migration {
	uint32_t tid, cpu;
	uint64_t time_ns;
};

struct thread {
	uint32_t tid;
	char comm[COMM_TEXT_LEN];
	uint64_t nsamples;
};

/* A program the process ran before an exec: its maps and program path, and
 * where its samples end (samples are kept in order, one by one, whenever a
 * per-process file is written). */
struct image {
	char *maps_text, *exe;
	size_t samples_end;
};

struct proc {
	struct procs *set; /* the set it is in: its shared state (proc_get) */
	pid_t pid;
	char comm[COMM_TEXT_LEN]; /* sanitized, as every name from outside */
	char *exe;		  /* the program's path, read when first seen; sanitized */
	uid_t uid;
	bool exited, gone; /* gone: /proc/PID vanished before we could read it */
	bool compacted;	   /* exited, and its lookup state freed (procs_retire) */
	bool retired;	   /* exited and given away: freed (procs_retire) */
	uint64_t exit_ns;  /* CLOCK_MONOTONIC of its exit event */
	char *maps_text;   /* the latest /proc/PID/maps, each line sanitized */
	uint64_t maps_read_ns;
	bool maps_read_queued; /* in the list procs_take_maps_read gives */
	bool maps_stale;       /* a re-read the rate limit put off (procs_reread_stale) */
	/* A runtime walk names its JIT code in place (user/runtime/: the JVM's,
	 * V8's): its unnamed JIT frames (a start-up's, before the runtime was
	 * found) call for no perf map. */
	bool jit_walked;
	VEC(struct mapping *) maps_all; /* owned, never freed while recording */
	VEC(struct mapping *) maps;	/* current, sorted by start */
	VEC(struct frame) frames;
	struct idtab frame_tab;
	size_t image_frames; /* frames[image_frames...]: the current image's */
	uint64_t unmapped;   /* of those, user frames no mapping covered */
	/* Stacks: stack_data[stack_off[i]] = nkernel, nuser, then frame ids leaf first. */
	VEC(uint32_t) stack_data;
	VEC(uint32_t) stack_off;
	struct idtab stack_tab;
	/* The same stacks by the record's raw ips (walked in BPF, not DWARF-
	 * unwound): a stack seen before costs one hash of its ips and one
	 * comparison, not a lookup per frame. Only stacks whose user frames
	 * all have a mapping (an unmapped one re-reads the maps: intern_frame).
	 * raw_tab's ids are places in raw_ips, each a word (stack << 32 | nk <<
	 * 16 | nu) then the ips as the record had them: the comparison reads
	 * them in order, not one frame each from frames (scattered loads,
	 * mostly cache misses when the drain wakes). */
	struct idtab raw_tab;
	VEC(uint64_t) raw_ips;
	VEC(struct sample) samples;
	struct idtab sample_tab; /* procs->aggregate: samples by stack, tid and cpu */
	uint64_t nsamples;	 /* the sum of their counts */
	VEC(struct thread) threads;
	struct idtab thread_tab;
	uint32_t last_thread;	     /* proc_thread's last find: a thread's samples come in runs */
	uint64_t lost;		     /* from BPF's per-process counter */
	struct unwinder *uw;	     /* DWARF unwinder, made on the first copied stack */
	uint64_t uw_used_ns;	     /* its last unwind (procs_trim_unwinders) */
	uint64_t unwound, truncated; /* samples DWARF-unwound, of them cut short */
	/* Samples the CFI walk in BPF unwound, of those reaching the root, and
	 * copied for DWARF instead (a table not loaded yet, or over budget). */
	uint64_t cfi_walked, cfi_root, cfi_to_dwarf;
	uint64_t max_stack_cut; /* samples whose stack was cut at --max-stack */
	uint64_t unwind_ns;	/* time spent in DWARF unwinding */
	/* Others' state of the process, which they free (the model does not:
	 * xray_proc_free, jit_proc_free) before it is given back or freed. */
	struct fdr *exact;		  /* XRay trace of -t calls */
	struct jit_state *jit;		  /* its jitdump and perf map */
	VEC(struct migration) migrations; /* for the sampled timelines */
	VEC(struct image) images;	  /* before each exec, oldest first */
};

/* Every file mapped by a process seen, by device and inode: the path of a
 * file that an exited process had mapped, known from another process. Copies:
 * the mappings of exited processes are freed (procs_retire). */
struct known_file {
	uint64_t inode;
	unsigned dev_major, dev_minor;
	char *path;
};

struct vdso_image {
	uint64_t hash;
	int fd;
};

/* All processes seen, in order of first sight, and what they share. Owned
 * by the recorder (zeroed to start), passed to whatever looks a process up
 * or walks them all; a process reaches it by its set. */
/* A source of names for the user frames no binary's symbols name: a
 * runtime's JIT files (user/jit.c), Python's code objects
 * (user/runtime/python_names.c).
 * proc.c, the model, asks the sources it is given (procs_add_names) and
 * knows none of them. Each callback may be NULL. */
struct name_hit {
	const char *name;	 /* sanitized, demangled */
	const char *system_name; /* as the source wrote it, when it differs; or NULL */
	const char *file;	 /* the source of pc, or NULL */
	int line;
	int start_line; /* the function's first line in file, or 0 */
};
struct name_source {
	void *ctx;
	/* The process's maps were read (first sight, exec, a new library),
	 * while it runs: its files are looked for now. */
	void (*maps_read)(void *ctx, struct proc *p);
	/* The name of the user frame at pc, at time t (CLOCK_MONOTONIC ns). */
	bool (*find)(void *ctx, struct proc *p, uint64_t pc, uint64_t t, struct name_hit *hit);
	/* Whether the process's frames are named by the time of each sample
	 * (a runtime reuses addresses): its samples are then kept one by one. */
	bool (*by_time)(void *ctx, const struct proc *p);
	/* A sample record's user frames, pcs[0..*n) leaf first (at most max,
	 * --max-stack's), rewritten from what the record carries besides its
	 * ips (Python's frames): frames of SOURCE_PC_BASE and up, which find
	 * names. *cut: the stack ends where it was cut (in [truncated], at
	 * its end): set where the rewrite cut it, at max or where the frames
	 * it had ran out; frames beyond a cut are not put back. */
	void (*rewrite)(void *ctx, struct proc *p, const struct ev_sample *s, uint64_t *pcs, int *n,
			int max, bool *cut);
	/* A CPU sample's user leaf, interned. */
	void (*leaf)(void *ctx, struct proc *p, const struct frame *leaf);
};
#define PROCS_MAX_NAMES 4

/* An address outside every mapping re-reads /proc/PID/maps (a dlopen, a new
 * JIT region), but not more often than this: garbage frames from
 * frame-pointer walks through code built without them also miss. The drain
 * keeps this pace while a re-read waits (procs.maps_stale). */
#define MAPS_REREAD_MS 20

struct procs {
	VEC(struct proc *) v;
	struct idtab tab;
	/* Set before the first sample when no writer needs samples one by one
	 * (no per-sample timeline, no per-process file): samples of the same
	 * stack, thread and CPU are then kept as one with a count, and an
	 * exited process is given to the writers or compacted (procs_retire). */
	bool aggregate;
	/* --max-stack: user frames kept (DWARF unwinding's limit too), and the
	 * stacks cut there over the run, each ended by a [truncated] frame. */
	unsigned max_stack;
	uint64_t max_stack_cut;
	struct {
		VEC(struct known_file) v;
		struct idtab tab;
	} files;
	/* The vdso images seen (by a hash of their bytes), each in a memfd
	 * that its symbols are read from. */
	VEC(struct vdso_image) vdsos;
	/* Exited processes not compacted yet, in order of exit. */
	VEC(struct proc *) exited;
	uint64_t exits_missed; /* procs_sweep_gone's: processes found gone without an exit */
	/* Processes whose maps were read since procs_take_maps_read last ran. */
	VEC(pid_t) maps_read;
	/* Processes whose maps a record found stale within MAPS_REREAD_MS of
	 * their last read, or read at an exec: read again by
	 * procs_reread_stale. */
	VEC(pid_t) maps_stale;
	/* proc_find's last find: a process's records come in runs (one CPU's
	 * samples, -p's one process). Reset as processes are freed. */
	struct proc *last_proc;
	struct name_source names[PROCS_MAX_NAMES];
	unsigned nnames;
	/* The files the processes' unwinders share (user/unwind.h), the
	 * recorder's; NULL: each unwinder maps its own. */
	struct unwind_elves *elves;
};

/* Adds a source of names, asked after the ones added before. 0 or
 * -ENOSPC. */
int procs_add_names(struct procs *procs, const struct name_source *src);
/* Whether a source names the process's frames by the time of each sample. */
bool proc_named_by_time(const struct proc *p);

/* The process pid, made and read (identity, maps) at its first sight.
 * comm: its comm (its leader's) where the caller has it, else NULL: read
 * from /proc. */
struct proc *proc_get(struct procs *procs, pid_t pid, const char *comm);
/* Stores a comm from outside (at most COMM_LEN bytes, up to a NUL) into a
 * comm field, sanitized: it reaches terminals and files. */
void proc_set_comm(char dst[COMM_TEXT_LEN], const char *src, size_t n);
struct proc *proc_find(struct procs *procs, pid_t pid);
int proc_add_sample(struct procs *procs, const struct ev_sample *s);
/* The record's kernel and user frames (unwound as a sample's) as one of its
 * process's stacks, without a sample: *pp, *stack. 0 or -ENOMEM. */
int proc_intern_record(struct procs *procs, const struct ev_sample *s, struct proc **pp,
		       uint32_t *stack);
void proc_on_exec(struct procs *procs, pid_t pid, const char *comm);
/* A process exec'd the file (dev_major, dev_minor, ino) by path (n bytes at
 * most, from struct ev_exec): the file's path, for the exit-time mappings of
 * processes whose maps were never read, where the path names that file now. */
void procs_exec_file(struct procs *procs, uint32_t dev_major, uint32_t dev_minor, uint64_t ino,
		     const char *path, size_t n);
/* The process exited (time: its event's): what only a live process needs
 * goes now (the unwinder and its open files). */
void proc_on_exit(struct procs *procs, pid_t pid, uint64_t time_ns);
/* Under procs->aggregate, processes that exited before time_ns -
 * PROC_COMPACT_NS are done with: each is given to done(ctx, p), and freed
 * when it returns true (it took what it needs: the writers fold it into
 * their files as they go); otherwise, or without done, it drops its lookup
 * tables, maps text and the mappings no frame refers to, and stays. Later
 * samples of such a pid (a reused one) make or rebuild its state. The
 * grace: the kernel still samples a task in do_exit after its exit event. */
#define PROC_COMPACT_NS (1000 * 1000 * 1000ULL)
typedef bool (*proc_done_fn)(void *ctx, struct proc *p);
/* Those left when CLOCK_MONOTONIC passes until_ns wait for the next call:
 * done() names frames, which may read a file's debug info. */
void procs_retire(struct procs *procs, uint64_t time_ns, uint64_t until_ns, proc_done_fn done,
		  void *ctx);
/* Under procs->aggregate: forgets the process's stacks and samples, once the
 * writers have taken them (output_fold_live); its frames, threads and
 * counts stay. A long-lived process's distinct stacks would otherwise grow
 * for as long as the recording. */
void proc_drop_samples(struct proc *p);
/* --window: the process's window written, its samples are forgotten and its
 * counts (summary.json's row) start again at 0 for the next. Its stacks go
 * too unless keep_stacks (--off-cpu's sums name them by index). */
void proc_window_reset(struct proc *p, bool keep_stacks);
/* --window: the files known by name (a lookup aid for the mappings of a
 * process that exited before its maps were read) become those the
 * processes held now map: every file any process ever mapped would
 * otherwise be kept for the whole run, and a host that builds and runs new
 * binaries maps new ones all the time. */
void procs_files_trim(struct procs *procs);
/* --window: a process held as live whose pid is gone is taken as exited at
 * time_ns (freed at the next window's close), and counted in exits_missed:
 * its exit event was lost (a full ring buffer), or a sample drained after
 * its retirement made it again. Otherwise it would be held, a window after
 * another, for the rest of the run. */
void procs_sweep_gone(struct procs *procs, uint64_t time_ns);
/* What the model holds across windows (--window's summary.json "held"):
 * processes, those exited (freed at the window's close), and the frames,
 * mappings and threads of the live ones, kept for the next window. None of
 * it may grow with the run's length. */
struct procs_held {
	uint64_t procs, exited, frames, mappings, threads;
	uint64_t gone;	       /* held as live, but the pid is gone (procs_sweep_gone's next) */
	uint64_t files;	       /* the files (device, inode -> path) known by name */
	uint64_t exits_missed; /* procs_sweep_gone's, over the run */
};
void procs_held(const struct procs *procs, struct procs_held *h);
/* An executable mapping the process had as it exited (EV_VMA). */
void proc_on_vma(struct procs *procs, pid_t pid, const struct ev_vma *v);
struct thread *proc_thread(struct proc *p, uint32_t tid);
/* The thread, without adding it (works on compacted processes too); NULL
 * when it was never seen. */
const struct thread *proc_thread_find(const struct proc *p, uint32_t tid);
/* The mapping at addr (the maps read again, within their rate limit, when
 * none is), or NULL. */
struct mapping *proc_mapping_at(struct proc *p, uint64_t addr);
/* The frame's function name; without a symbol, its object ("[libfoo.so]"),
 * so time still adds up by library, or "[unknown]". buf may be used. */
const char *frame_name(const struct frame *f, char *buf, size_t len);
/* Source file and line of a user frame where its file has debug info. */
bool proc_srcline(const struct frame *f, const char **file, int *line);
/* The same for a frame seen at time t: JIT code is named by the runtime's
 * files, as it was at that time (demangled, as symbols are); *system_name
 * the mangled name, NULL when the name is not mangled (system_name may be
 * NULL); *file and *line where known (file NULL: no source line wanted,
 * and no debug info read for one). */
const char *frame_name_at(struct proc *p, const struct frame *f, uint64_t t, char *buf, size_t len,
			  const char **system_name, const char **file, int *line);
/* The first line of the frame's function in its source, where a source
 * of names knows it (Python's code objects), else 0. */
int frame_start_line(struct proc *p, const struct frame *f, uint64_t t);
/* Frames left unnamed because their file could not be opened when they
 * were first seen (a race with exec, seen under slow emulated kernels: every
 * frame of a program stayed "[prog]") are named now: each such file is
 * tried once more. Before writing a process. */
void proc_name_again(struct proc *p);
/* Calls fn(ctx, pid) for each process whose /proc/PID/maps was read since
 * the last call (a new process, an exec, a new library), once each. */
void procs_take_maps_read(struct procs *procs, void (*fn)(void *ctx, pid_t pid), void *ctx);
/* Reads again the maps of the processes whose re-read the rate limit put
 * off, once it allows (the drain, at each pass): a library mapped just
 * after a read (ld.so's, at a process's start) is then in the maps, and
 * its unwind tables are built, even when no record of the process comes
 * after (one asleep). */
void procs_reread_stale(struct procs *procs, uint64_t now);
/* Frees the DWARF unwinders not used since now - idle_ns (idle_ns 0: every
 * one); a process's next copied stack makes its unwinder again. Copies come
 * while a process's tables are not loaded (its first moments, a library
 * mapped since), and an unwinder holds each of the process's files mapped
 * and the CFI it read of them: a server's workers kept theirs all along. */
void procs_trim_unwinders(struct procs *procs, uint64_t now, uint64_t idle_ns);
/* Frames of a stack: *nk kernel then *nu user ids, leaf first. */
const uint32_t *proc_stack(const struct proc *p, uint32_t stack, uint32_t *nk, uint32_t *nu);

/* The one walk of a sample's frames, for every writer: leaf first (its
 * kernel frames, then its user frames) or root first.
 *	struct frame_iter it;
 *	frame_iter_init(&it, p, s, false);
 *	while (frame_iter_next(&it))
 *		... it.f, it.id, frame_iter_name(&it, buf, sizeof(buf), NULL, NULL, NULL) ...
 */
struct frame_iter {
	struct proc *p;
	const struct sample *s;
	const uint32_t *ids;
	uint32_t nk, n, k; /* kernel frames, all frames, the next one's place */
	bool root_first;
	/* The current frame: */
	const struct frame *f;
	uint32_t id; /* its index in p->frames */
	/* Its name is the same in every sample: a writer may keep what it made
	 * of it by id. Not so for user code with no symbol, which may be JIT
	 * code, named as it was at each sample's time. */
	bool stable;
};
void frame_iter_init(struct frame_iter *it, struct proc *p, const struct sample *s,
		     bool root_first);
bool frame_iter_next(struct frame_iter *it);
/* The current frame's name, as every file names it (frame_name_at at the
 * sample's time); its system name, file and line as frame_name_at's. */
const char *frame_iter_name(const struct frame_iter *it, char *buf, size_t len,
			    const char **system_name, const char **file, int *line);
/* Whether every frame of the stack is stable (frame_iter's): its names are
 * the same in every sample of it, whatever the sample's time. */
bool proc_stack_stable(const struct proc *p, uint32_t stack);
/* For the writers whose files add up the samples of one stack, thread and
 * CPU (profile.pb.gz, the folded stacks, cpu-PID.prof): p's samples
 * first..end-1 into out (room for end - first), those of a stable stack
 * (proc_stack_stable) merged into the first of them with the sum of their
 * counts, the others one by one, in their order. A writer then names and
 * adds each distinct stack once, not each sample's frames again: under -p,
 * where samples are kept one by one (the timelines, per-process files),
 * that work grew with the recording's length and was all done at the
 * stop. The same files, since they add those samples up anyway. The
 * number in out, or -ENOMEM. */
ssize_t proc_samples_merged(const struct proc *p, size_t first, size_t end, struct sample *out);
void procs_free(struct procs *procs);

#endif
