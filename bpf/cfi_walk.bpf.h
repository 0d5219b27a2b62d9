/* The CFI walk of user stacks in BPF: each frame's rules come from the
 * tables of bpf/cfi.h (compiled from .eh_frame by user/cfi_table.c, loaded
 * into the maps below by user/cfi_maps.c), as the OpenTelemetry profiler
 * and Parca Agent unwind native stacks. Off unless rodata cfi_walk is set.
 *
 * It runs in its own programs, reached from the sampler by tail call: one
 * walker invocation walks CFI_FRAMES_PER_CALL frames with a bounded loop,
 * keeps its state in the per-CPU scratch slot and tail-calls itself, as
 * deep as the kernel's tail-call budget allows (CFI_COMPAT_FRAMES,
 * bpf/cfi.h); where the kernel has bpf_loop (on_cfi_walk) the last
 * invocation goes on in bpf_loop blocks up to --max-stack frames (5.10's
 * on_cfi_walk_compat stops there); then it sends the record. A frame is a
 * trie lookup, a hash lookup and a 20-step binary search: a stack's frames
 * unrolled in one program are far beyond the verifier's million
 * instructions.
 *
 * Its maps and the walk's steps here, shared by the units that start or
 * run a walk, which include it after bpf/sampler.bpf.h (sample.bpf.c
 * defines the maps); its programs, on_cfi_walk and on_cfi_walk_compat, in
 * bpf/cfi_walk.bpf.c. */
#ifndef BPF_CFI_WALK_BPF_H
#define BPF_CFI_WALK_BPF_H

#include <bpf/bpf_endian.h>
#include "bpf/cfi.h"

SHARED const volatile bool cfi_walk SHARED_INIT(false);
/* Off (tests/unit/test_cfi_bpf): no word is taken from the sample's stack
 * copy, every one is read as beyond it, so that the comparison with libdwfl
 * over the whole copy covers the window reads. */
SHARED const volatile bool cfi_read_copy SHARED_INIT(true);

/* The tables, concatenated; user space sizes it (bpf_map__set_max_entries)
 * to its row budget before load. One entry by default: nothing is spent
 * while the walk is off. Mmapable (5.5+): user space writes the rows with
 * a memcpy (user/cfi_maps.c's map_rows). */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfi_row);
} cfi_rows SEC(".maps");

/* Table id -> slice. An array, not the hash bpf/cfi.h proposed: perf_event
 * programs may only use preallocated hash maps (5.10's verifier: they run
 * in NMI), and user space hands out small ids anyway. nrows 0: no table. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096); /* resized by the loader */
	__type(key, __u32);
	__type(value, struct cfi_table_info);
} cfi_tables SEC(".maps");

SHARED struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* an LPM trie requires it */
	__type(key, struct cfi_mapping_key);
	__type(value, struct cfi_mapping);
} cfi_mappings SEC(".maps");

/* Processes whose first walk that met no table was sent with a wakeup: the
 * drain then sees the process now, not at its next pass, and has its
 * tables loaded that much sooner (until then each sample is a DWARF copy of
 * kilobytes, for user space to unwind). Once per process, and once more
 * after each time user space loads it (user/cfi_maps.c deletes the entry):
 * the libraries its loader mapped after that read, a dlopen. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} cfi_woken SEC(".maps");

/* (device, inode) of a file -> its loaded table (bpf/cfi.h). A hash, as
 * perf_event programs may use only preallocated ones. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* the loader: as cfi_tables, when the walk is on */
	__type(key, struct cfi_file_key);
	__type(value, struct cfi_file);
} cfi_files SEC(".maps");

/* tgid -> the mappings bpf_find_vma found for a process not loaded yet
 * (bpf/cfi.h's cfi_pcache). Emptied at exec and exit (sample.bpf.c). */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* the loader: 4096 when the walk is on */
	__type(key, __u32);
	__type(value, struct cfi_pcache);
} cfi_pcache SEC(".maps");

/* The caches' tag (bpf/cfi.h's CFI_GEN_*). */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} cfi_gen SEC(".maps");

/* [0]: on_cfi_walk, [1]: on_cfi_walk_compat; filled by user space. Empty,
 * the tail call fails and the sample takes the usual path
 * (STAT_CFI_NO_PROG). */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} cfi_progs SEC(".maps");

/* Bytes copied for DWARF when the walk meets a mapping without a table and
 * the process has no stack_copy_dwarf of its own. */
#define CFI_NOTABLE_COPY 16384

enum { CFI_LK_ROW, CFI_LK_NOMAP, CFI_LK_NOTABLE, CFI_LK_BAD };
/* CFI_DONE_LIMIT: --max-stack frames walked (or the compat walker's
 * budget), the stack goes on. */
enum { CFI_GO, CFI_DONE_END, CFI_DONE_TRUNC, CFI_DONE_NOTABLE, CFI_DONE_LIMIT };

/* The inode's mtime before 6.11 (i_mtime_sec, i_mtime_nsec since). */
struct inode___v66 {
	struct timespec64 __i_mtime; /* 6.6 .. 6.10 */
} __attribute__((preserve_access_index));
struct inode___v5 {
	struct timespec64 i_mtime; /* before 6.6 */
} __attribute__((preserve_access_index));

struct vma_info {
	__u64 start, end, pgoff, ino, size;
	__s64 mtime_sec;
	__u32 mtime_nsec, dev;
	__u32 kind; /* 0: anonymous, 1: a file, 2: the [vdso] */
};

static long vma_info_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_info *vi = data;
	struct file *f = vma->vm_file;

	vi->start = vma->vm_start;
	vi->end = vma->vm_end;
	vi->pgoff = vma->vm_pgoff;
	if (f) {
		struct inode *in = f->f_inode;

		vi->kind = 1;
		vi->ino = in->i_ino;
		vi->dev = in->i_sb->s_dev;
		vi->size = in->i_size;
		if (bpf_core_field_exists(in->i_mtime_sec)) {
			vi->mtime_sec = BPF_CORE_READ(in, i_mtime_sec);
			vi->mtime_nsec = BPF_CORE_READ(in, i_mtime_nsec);
		} else if (bpf_core_field_exists(((struct inode___v66 *)in)->__i_mtime)) {
			vi->mtime_sec = BPF_CORE_READ((struct inode___v66 *)in, __i_mtime.tv_sec);
			vi->mtime_nsec = BPF_CORE_READ((struct inode___v66 *)in, __i_mtime.tv_nsec);
		} else {
			vi->mtime_sec = BPF_CORE_READ((struct inode___v5 *)in, i_mtime.tv_sec);
			vi->mtime_nsec = BPF_CORE_READ((struct inode___v5 *)in, i_mtime.tv_nsec);
		}
	} else if ((__u64)BPF_CORE_READ(vma, vm_mm, context.vdso) == vma->vm_start) {
		vi->kind = 2;
	}
	return 0;
}

/* A pc the trie has no table for (m: its entry, NULL for a process not
 * loaded yet, else the /32 marker or a table 0): its file's table, from
 * the vma (bpf/cfi.h's cfi_files), into the state's cached mapping. A new
 * process of a binary already built is so walked from its first sample.
 * Else no table (DWARF): the compat walker has no bpf_find_vma (5.17), and
 * the marker's pc may be a library mapped since, which frame pointers
 * would not walk; only anonymous memory found behind the marker (JIT code
 * mapped since) is walked by frame pointer. */
static __always_inline int cfi_by_file(struct cfi_state *st, __u64 addr, struct cfi_mapping *m,
				       const bool compat)
{
	struct vma_info vi = {};
	struct cfi_file_key k = {};
	struct cfi_file *f;
	__u64 off, bias, lo, hi, va;
	__u32 i, s = 0;
	int miss = CFI_LK_NOTABLE;

	if (compat)
		return miss;
	if (!m) {
		struct cfi_pcache *pc = bpf_map_lookup_elem(&cfi_pcache, &st->tgid);

		for (i = 0; pc && i < CFI_PCACHE_N; i++) {
			if (i >= pc->n || addr < pc->e[i].start || addr >= pc->e[i].end)
				continue;
			f = bpf_map_lookup_elem(&cfi_files, &pc->e[i].file);
			s = pc->e[i].slice;
			/* Unloaded or replaced: found again. */
			if (!f || s >= CFI_FILE_SLICES || f->slice_id[s] != pc->e[i].table)
				break;
			st->m_table = pc->e[i].table;
			st->m_bias = pc->e[i].bias;
			st->m_start = pc->e[i].start;
			st->m_end = pc->e[i].end;
			return CFI_LK_ROW;
		}
	}
	if (st->vma_done)
		return miss;
	st->vma_done = 1;
	if (bpf_find_vma(bpf_get_current_task_btf(), addr, vma_info_cb, &vi, 0))
		return miss; /* no vma (a garbage pc), or the mm busy */
	if (!vi.kind) {	     /* anonymous memory: JIT code of a loaded process */
		if (!m)
			return miss;
		/* The vma is the state's mapping from here: the next frames
		 * in it (V8's JavaScript frames in a code page committed
		 * since, dozens deep) are walked by frame pointer too. Else
		 * the second met no table, the one bpf_find_vma of a walk
		 * spent, and its deep stack went to DWARF and was cut. */
		st->m_table = CFI_TABLE_NOMAP;
		st->m_bias = 0;
		st->m_start = vi.start;
		st->m_end = vi.end;
		return CFI_LK_NOMAP;
	}
	if (vi.kind == 1) {
		k.dev = vi.dev;
		k.ino = vi.ino;
	}
	f = bpf_map_lookup_elem(&cfi_files, &k);
	/* A file mapped since the process was loaded, not built yet. */
	if (!f)
		return CFI_LK_NOTABLE;
	if (vi.kind == 1 &&
	    (f->size != vi.size || f->mtime_sec != vi.mtime_sec || f->mtime_nsec != vi.mtime_nsec))
		return CFI_LK_NOTABLE; /* another file, or changed: not this table */
	off = vi.pgoff << 12;
	for (i = 0; i < CFI_FILE_SEGS; i++)
		if (i < f->nsegs && off >= f->seg[i].off_lo && off < f->seg[i].off_hi)
			break;
	if (i >= CFI_FILE_SEGS)
		return CFI_LK_NOTABLE;
	bias = vi.start - (off + f->seg[i].delta);
	va = addr - bias;
	s = 0;
	for (i = 1; i < CFI_FILE_SLICES; i++)
		if (i < f->nslices && f->slice_lo[i] <= va)
			s = i;
	lo = vi.start;
	hi = vi.end;
	if (s && f->slice_lo[s] + bias > lo)
		lo = f->slice_lo[s] + bias;
	if (s + 1 < f->nslices && s + 1 < CFI_FILE_SLICES && f->slice_lo[s + 1] + bias < hi)
		hi = f->slice_lo[s + 1] + bias;
	if (s >= CFI_FILE_SLICES || !f->slice_id[s] || addr < lo || addr >= hi)
		return CFI_LK_NOTABLE;
	count(STAT_CFI_BY_FILE);
	st->m_table = f->slice_id[s];
	st->m_bias = bias;
	st->m_start = lo;
	st->m_end = hi;
	if (!m) {
		struct cfi_pcache *pc = bpf_map_lookup_elem(&cfi_pcache, &st->tgid);

		/* A copy, replaced whole: the process's other threads may
		 * read it meanwhile on other CPUs. */
		if (pc)
			st->pcache = *pc;
		else
			__builtin_memset(&st->pcache, 0, sizeof(st->pcache));
		i = st->pcache.n < CFI_PCACHE_N ? st->pcache.n++ : st->pcache.next++ % CFI_PCACHE_N;
		if (i < CFI_PCACHE_N) {
			st->pcache.e[i].start = lo;
			st->pcache.e[i].end = hi;
			st->pcache.e[i].bias = bias;
			st->pcache.e[i].table = st->m_table;
			st->pcache.e[i].file = k;
			st->pcache.e[i].slice = s;
			bpf_map_update_elem(&cfi_pcache, &st->tgid, &st->pcache, BPF_ANY);
		}
	}
	return CFI_LK_ROW;
}

/* The slot of a lookup address in the row cache: a multiplicative hash
 * (call sites of one function are a few bytes apart). */
static __always_inline __u32 cfi_rc_slot(__u64 addr)
{
	return (addr * 0x9e3779b97f4a7c15ULL) >> (64 - CFI_RC_BITS);
}

/* The row of a lookup address (bpf/cfi.h's lookup). */
static __always_inline int cfi_lookup(struct scratch *sc, __u64 addr, struct cfi_row *row,
				      const bool compat)
{
	struct cfi_state *st = &sc->cfi;
	struct cfi_mapping_key k = {
	    .prefixlen = 96,
	    .tgid_be = bpf_htonl(st->tgid),
	    .pc_be = bpf_cpu_to_be64(addr),
	};
	struct cfi_table_info *t;
	struct cfi_mapping *m;
	struct cfi_row *r;
	__u32 lo = 0, hi, mid, i, first, idx, page, slot = cfi_rc_slot(addr);
	__u64 off;

	/* Found by this or an earlier sample of the process: a recursion's
	 * frames, and the call sites every sample of a loop returns through. */
	if (slot < (1 << CFI_RC_BITS) && sc->cc.rc[slot].gen == st->gen &&
	    sc->cc.rc[slot].tgid == st->tgid && addr - sc->cc.rc[slot].lo < sc->cc.rc[slot].len) {
		*row = sc->cc.rc[slot].row;
		return CFI_LK_ROW;
	}
	if (addr < st->m_start || addr >= st->m_end) {
		for (i = 0; i < CFI_MC_N; i++)
			if (sc->cc.mc[i].gen == st->gen && sc->cc.mc[i].tgid == st->tgid &&
			    addr >= sc->cc.mc[i].start && addr < sc->cc.mc[i].end)
				break;
		if (i < CFI_MC_N) {
			st->m_table = sc->cc.mc[i].table;
			st->m_bias = sc->cc.mc[i].bias;
			st->m_start = sc->cc.mc[i].start;
			st->m_end = sc->cc.mc[i].end;
			goto search;
		}
		m = bpf_map_lookup_elem(&cfi_mappings, &k);
		if (!m || !m->table || m->table == CFI_TABLE_MARKER) {
			int lk = cfi_by_file(st, addr, m, compat);

			if (lk != CFI_LK_ROW)
				return lk;
		} else {
			st->m_table = m->table;
			st->m_bias = m->bias;
			st->m_start = m->start;
			st->m_end = m->end;
			i = sc->cc.mc_next++ % CFI_MC_N;
			if (i < CFI_MC_N) {
				sc->cc.mc[i].start = m->start;
				sc->cc.mc[i].end = m->end;
				sc->cc.mc[i].bias = m->bias;
				sc->cc.mc[i].table = m->table;
				sc->cc.mc[i].tgid = st->tgid;
				sc->cc.mc[i].gen = st->gen;
			}
		}
	}
search:
	idx = st->m_table;
	if (idx == CFI_TABLE_NOMAP) /* kept like a table's range: JIT frames in a row */
		return CFI_LK_NOMAP;
	t = bpf_map_lookup_elem(&cfi_tables, &idx);
	if (!t || !t->nrows)
		return CFI_LK_NOTABLE; /* being replaced: as if not loaded */
	off = addr - st->m_bias - t->base;
	first = t->first_row;
	hi = t->nrows;
	/* Below base (wrapped) or beyond 4 GiB: no row covers it. */
	if (off >= (1ULL << 32)) {
		row->kind = CFI_ROW_NONE;
		return CFI_LK_ROW;
	}
	/* The rows of off's page only (bpf/cfi.h's page index). */
	page = ((__u32)off >> CFI_PAGE_SHIFT) - t->idx_page0;
	if (((__u32)off >> CFI_PAGE_SHIFT) >= t->idx_page0 && page < t->idx_n) {
		idx = t->idx_first + page;
		r = bpf_map_lookup_elem(&cfi_rows, &idx);
		if (!r)
			return CFI_LK_BAD;
		lo = r->pc_off;
		if (page + 1 < t->idx_n) {
			idx++;
			r = bpf_map_lookup_elem(&cfi_rows, &idx);
			if (!r)
				return CFI_LK_BAD;
			hi = r->pc_off + 1;
		}
		if (hi > t->nrows || lo >= hi) { /* a bad index: the whole table */
			lo = 0;
			hi = t->nrows;
		}
	}
	for (i = 0; i < CFI_BSEARCH_STEPS && hi - lo > 1; i++) {
		mid = lo + (hi - lo) / 2;
		idx = first + mid;
		r = bpf_map_lookup_elem(&cfi_rows, &idx);
		if (!r)
			return CFI_LK_BAD;
		if (r->pc_off <= (__u32)off)
			lo = mid;
		else
			hi = mid;
	}
	if (hi - lo > 1)
		return CFI_LK_BAD; /* more rows than CFI_TABLE_MAX_ROWS: user space splits */
	idx = first + lo;
	r = bpf_map_lookup_elem(&cfi_rows, &idx);
	if (!r)
		return CFI_LK_BAD;
	*row = *r;
	if (r->pc_off > (__u32)off) {
		row->kind = CFI_ROW_NONE;
		return CFI_LK_ROW;
	}
	/* Kept with its range, up to the next row (the last row of a slice
	 * has none here: not kept). */
	if (hi < t->nrows) {
		idx = first + hi;
		r = bpf_map_lookup_elem(&cfi_rows, &idx);
		if (r && slot < (1 << CFI_RC_BITS)) {
			sc->cc.rc[slot].row = *row;
			sc->cc.rc[slot].lo = st->m_bias + t->base + row->pc_off;
			sc->cc.rc[slot].len = r->pc_off - row->pc_off;
			sc->cc.rc[slot].tgid = st->tgid;
			sc->cc.rc[slot].gen = st->gen;
		}
	}
	return CFI_LK_ROW;
}

/* A read beyond the copy takes a window of stack from the word to the end
 * of its page (a read is all-or-nothing, and the next page may be
 * unmapped), the walk's first at most CFI_WIN_FIRST bytes: most stacks end
 * within them. Measured here (6.18, KVM): a bpf_probe_read_user of 8 bytes
 * costs ~125 ns, of 128 ~300, of 1 KiB ~430, of 4 KiB ~950, and the walk
 * reads upwards, as the frames go: a window holds the next frames' words. */
#define CFI_WIN_FIRST 1024

/* A word of user stack: from the copy when it holds it, else from the
 * window (sc->win, as the frame-pointer walk's), read anew when it does not
 * hold it. */
static __always_inline int cfi_read(struct scratch *sc, __u64 addr, __u64 *val)
{
	__u64 off = addr - sc->cfi.sp0, len;

	if (cfi_read_copy && addr >= sc->cfi.sp0 && off + 8 <= sc->cfi.copied && !(addr & 7)) {
		barrier_var(off);
		if (off <= MAX_STACK_COPY - 8) {
			*val = *(__u64 *)&sc->stack[off];
			return 0;
		}
	}
	off = addr - sc->win_lo;
	if (addr < sc->win_lo || off + 8 > sc->win_len) {
		len = PAGE_SZ - (addr & (PAGE_SZ - 1));
		if (!sc->win_len && len > CFI_WIN_FIRST)
			len = CFI_WIN_FIRST;
		/* A word across pages: read alone. */
		if (len < 8) {
			if (bpf_probe_read_user(val, sizeof(*val), (void *)addr))
				goto fail;
			return 0;
		}
		barrier_var(len);
		len = ((len - 1) & (PAGE_SZ - 1)) + 1;
		if (bpf_probe_read_user(sc->win, len, (void *)addr))
			goto fail;
		sc->win_lo = addr;
		sc->win_len = len;
		off = 0;
	}
	barrier_var(off);
	if (off > WIN_SZ - 8)
		return -1;
	*val = *(__u64 *)&sc->win[off];
	return 0;
fail:
	count(STAT_CFI_READ_ERR);
	return -1;
}

/* A caller's pc at CPython's perf trampoline (bpf/cfi.h), in anonymous
 * code of a process walked for Python (py_procs): the frame-pointer step
 * took a caller's rbp there, and every stack of a python3.12 -X perf ended
 * at its innermost trampoline. True with the caller's cfa. The leaf may be
 * at any of its four instructions (a call entering or leaving it: 0.9 % of
 * json.tool's samples ended there): at the sub and the ret, the return
 * address is at sp; at the call and the add, above the 8 bytes taken. */
static __always_inline bool cfi_py_tramp(struct cfi_state *st, __u64 *cfa)
{
	__u64 code[2];

	if (!st->py)
		st->py = bpf_map_lookup_elem(&py_procs, &st->tgid) ? 2 : 1;
	if (st->py != 2)
		return false;
	if (st->addr == st->pc) { /* the leaf: the exact instruction */
		for (int i = 0; i < 4; i++) {
			__u32 off = i == 0 ? 0 : i == 1 ? 4 : i == 2 ? PY_TRAMP_RET : 10;

			if (!bpf_probe_read_user(code, sizeof(code), (void *)(st->pc - off)) &&
			    py_tramp_code(code)) {
				*cfa = st->sp + (i == 1 || i == 2 ? PY_TRAMP_CFA : 8);
				return true;
			}
		}
		return false;
	}
	if (bpf_probe_read_user(code, sizeof(code), (void *)(st->pc - PY_TRAMP_RET)) ||
	    !py_tramp_code(code))
		return false;
	*cfa = st->sp + PY_TRAMP_CFA;
	return true;
}

/* A frame in a JVM's code cache (jvm_procs), stepped by the HotSpot walk
 * (bpf/runtime/jvm.bpf.c), which records it: JVM_STEP_OK with the caller's return
 * address, sp and rbp in the state's jvm_ra, jvm_cfa and bp (not through
 * pointers to the caller's stack: the walkers, their bpf_loop callback and
 * the step share 512 bytes of it); JVM_STEP_NOT_JAVA where it is no JVM's
 * code (the frame-pointer step then, as for any JIT code). */
static __always_inline int cfi_jvm(struct cfi_state *st)
{
	__u32 slot = st->jvm_slot;
	struct jvm_bpf_step *js;
	int r;

	if (!st->jvm) {
		struct jvm_bpf_proc *p = bpf_map_lookup_elem(&jvm_procs, &st->tgid);

		st->jvm = p ? 2 : 1;
		if (p) {
			st->jvm_lo = p->cc_lo;
			st->jvm_hi = p->cc_hi;
			/* The slot's frames, layout, time and stack window
			 * are this walk's from here. */
			if ((js = bpf_map_lookup_elem(&jvm_scratch, &slot))) {
				js->n = 0;
				js->truncated = 0;
				js->tid = (__u32)bpf_get_current_pid_tgid();
				js->pr = *p;
				js->pr_tgid = st->tgid;
				js->now = bpf_ktime_get_ns();
				js->win_len = 0;
			}
		}
	}
	if (st->jvm != 2 || st->pc < st->jvm_lo || st->pc >= st->jvm_hi ||
	    !(js = bpf_map_lookup_elem(&jvm_scratch, &slot)))
		return JVM_STEP_NOT_JAVA;
	js->tgid = st->tgid;
	js->pc = st->pc;
	js->sp = st->sp;
	js->bp = st->bp;
	/* An exact pc (the sample's, or one a signal frame interrupted, as
	 * JFR's and the GC's thread suspensions do): it may be in a prologue
	 * or epilogue, and has no PcDesc of its own; r13 is the sample's
	 * only. */
	js->r13 = st->n == 1 ? st->r13 : 0;
	js->leaf = st->addr == st->pc;
	js->index = st->n - 1;
	r = jvm_unwind(slot);
	if (r == JVM_STEP_OK) {
		st->jvm_ra = js->pc;
		st->jvm_cfa = js->sp;
		st->bp = js->bp;
	}
	return r;
}

/* A frame whose pc is V8's code (anonymous memory, or the embedded
 * builtins) in a process of v8_procs: recorded by the V8 step
 * (bpf/runtime/v8.bpf.c) when it is a JavaScript frame. The walk itself goes on by
 * the frame-pointer step: V8 keeps rbp frames. Its slot is the JVM walk's
 * (JVM_SLOT_*): one per walker. */
static __always_inline void cfi_v8(struct cfi_state *st)
{
	__u32 slot = st->jvm_slot;
	struct v8_bpf_step *vs;

	if (!st->v8) {
		struct v8_bpf_proc *p = bpf_map_lookup_elem(&v8_procs, &st->tgid);

		st->v8 = p ? 2 : 1;
		if (p) {
			st->v8_lo = p->emb_lo;
			st->v8_hi = p->emb_hi;
			/* The slot's frames are this walk's from here. */
			if ((vs = bpf_map_lookup_elem(&v8_scratch, &slot))) {
				vs->n = 0;
				vs->truncated = 0;
				for (int c = 0; c < V8_FN_CACHE; c++)
					vs->c_fn[c] = 0;
				vs->proc = *p;
				vs->tid = (__u32)bpf_get_current_pid_tgid();
			}
		}
	}
	if (st->v8 != 2 || (!st->v8_anon && (st->pc < st->v8_lo || st->pc >= st->v8_hi)) ||
	    !(vs = bpf_map_lookup_elem(&v8_scratch, &slot)))
		return;
	vs->pc = st->pc;
	vs->bp = st->bp;
	vs->index = st->n - 1;
	v8_record(slot);
}

/* One frame: from the state's (pc, sp, bp) and lookup address to the
 * caller's, appending its return address to the ips. */
static __always_inline int cfi_step(struct scratch *sc, const bool compat)
{
	struct cfi_state *st = &sc->cfi;
	__u64 *ips = sc->head + sizeof(struct ev_sample) / 8;
	__u64 sp = st->sp, bp = st->bp, cfa, ra, idx, addr;
	struct cfi_row row = {};
	int r;

	if (st->n >= max_stack)
		return CFI_DONE_LIMIT;
	r = cfi_lookup(sc, st->addr, &row, compat);
	/* In no mapping with a table: JIT code, for the V8 step (cfi_v8). */
	st->v8_anon = r == CFI_LK_NOMAP;
	/* No table: the stack is copied for DWARF at the end, and the walk
	 * goes on by frame pointers, which user space takes when DWARF cannot
	 * unwind the copy (a short-lived process gone before its maps were
	 * read). */
	if (r == CFI_LK_NOTABLE) {
		/* The frames walked so far are good: the copy for DWARF starts
		 * at this frame (cfi_finish), so that a deep stack whose root
		 * library's table is not loaded yet (the first samples after
		 * it is mapped) is unwound to the root from 16 KiB of copy. */
		if (!st->notable) {
			st->nt_n = st->n;
			st->nt_addr = st->addr;
			st->nt_sp = sp;
			st->nt_bp = bp;
		}
		st->notable = 1;
		r = CFI_LK_NOMAP;
	}
	if (r == CFI_LK_BAD)
		return CFI_DONE_TRUNC;
	if (r == CFI_LK_NOMAP || row.kind == CFI_ROW_NONE || row.kind == CFI_ROW_FALLBACK ||
	    row.kind > CFI_ROW_END) {
		count(r == CFI_LK_NOMAP		     ? STAT_CFI_FP_NOMAP
		      : row.kind == CFI_ROW_FALLBACK ? STAT_CFI_FP_FALLBACK
						     : STAT_CFI_FP_NONE);
		if (r == CFI_LK_NOMAP) {
			int j = cfi_jvm(st);

			if (j == JVM_STEP_OK) {
				ra = st->jvm_ra;
				cfa = st->jvm_cfa;
				addr = ra - 1;
				goto step;
			}
			if (j == JVM_STEP_FAIL)
				return CFI_DONE_TRUNC;
		}
		cfi_v8(st);
		if (r == CFI_LK_NOMAP && cfi_py_tramp(st, &cfa)) {
			if (cfi_read(sc, cfa - 8, &ra))
				return CFI_DONE_TRUNC;
			if (ra == st->tramp && ra)
				ra = cfi_uretprobe(st, cfa - 8);
			addr = ra - 1;
			goto step;
		}
		/* One frame-pointer step: the frame record at rbp. Only one
		 * above the current sp: the stack grows down. */
		if (!bp || (bp & 7) || bp < sp)
			return CFI_DONE_TRUNC;
		/* Lower address first: a window read holds the words above. */
		if (cfi_read(sc, bp, &st->bp) || cfi_read(sc, bp + 8, &ra))
			return CFI_DONE_TRUNC;
		if (ra == st->tramp && ra)
			ra = cfi_uretprobe(st, bp + 8);
		cfa = bp + 16;
		addr = ra - 1;
	} else if (row.kind == CFI_ROW_END) {
		return CFI_DONE_END;
	} else if (row.kind == CFI_ROW_SIGNAL) {
		/* The kernel's ucontext at sp: the interrupted registers. */
		if (cfi_read(sc, sp + CFI_SIG_RBP, &st->bp) ||
		    cfi_read(sc, sp + CFI_SIG_RSP, &cfa) || cfi_read(sc, sp + CFI_SIG_RIP, &ra))
			return CFI_DONE_TRUNC;
		addr = ra; /* exact: the interrupted instruction, not after a call */
	} else {
		if (row.kind == CFI_ROW_RBP)
			cfa = bp + (__s64)row.cfa_off * 8;
		else
			cfa = sp + (__s64)row.cfa_off * 8;
		if (row.kind == CFI_ROW_PLT && (st->pc & 15) >= CFI_PLT_SPLIT)
			cfa += 8;
		/* A CFA at or below sp is garbage (a wrong table, a corrupt
		 * rbp): the caller's frame is above. */
		if (cfa <= sp)
			return CFI_DONE_TRUNC;
		/* The saved rbp (below the return address) first: a window
		 * read holds the words above. */
		if (row.rbp_off && cfi_read(sc, cfa + (__s64)row.rbp_off * 8, &st->bp))
			return CFI_DONE_TRUNC;
		if (cfi_read(sc, cfa - 8, &ra))
			return CFI_DONE_TRUNC;
		if (ra == st->tramp && ra)
			ra = cfi_uretprobe(st, cfa - 8);
		addr = ra - 1; /* the call: a noreturn call may end its function */
	}
step:
	if (!ra)
		return CFI_DONE_END;
	idx = st->nk + st->n;
	if (idx >= IPS_N)
		return CFI_DONE_TRUNC;
	ips[idx] = ra;
	st->n++;
	st->pc = ra;
	st->sp = cfa;
	st->addr = addr;
	return CFI_GO;
}

/* The end of a walk: flags, stats (the sampler's; sampled false for an
 * off-CPU stack's walk, counted by bpf/offcpu.bpf.c) and the DWARF copy when
 * a table was missing. */
static __always_inline void cfi_end(struct scratch *sc, int r, const bool sampled,
				    const bool compat)
{
	struct ev_sample *s = (struct ev_sample *)sc->head;

	s->flags |= SAMPLE_CFI;
	if (sc->cfi.notable)
		r = CFI_DONE_NOTABLE;
	if (r == CFI_DONE_END) {
		s->flags |= SAMPLE_CFI_END;
		if (sampled)
			count(STAT_CFI_END);
	} else if (r == CFI_DONE_NOTABLE) {
		s->flags |= SAMPLE_CFI_NOTABLE;
		if (sampled)
			count(STAT_CFI_NOTABLE);
		if (!bpf_map_lookup_elem(&cfi_woken, &sc->cfi.tgid)) {
			__u8 one = 1;

			bpf_map_update_elem(&cfi_woken, &sc->cfi.tgid, &one, BPF_ANY);
			sc->wake = 1;
		}
		/* The usual DWARF path: user space unwinds the copy with
		 * libdwfl, which reads the binary itself. */
		__u64 base = sc->cfi.sp0;

		if (!(s->flags & SAMPLE_DWARF)) {
			__u64 want = stack_copy_dwarf ? stack_copy_dwarf : CFI_NOTABLE_COPY;
			__u32 copied;

			if (want > MAX_STACK_COPY)
				want = MAX_STACK_COPY;
			/* Past the leaf: from the frame without a table, whose
			 * registers replace the sample's (SAMPLE_DWARF_AT). */
			if (sc->cfi.nt_n > 1) {
				base = sc->cfi.nt_sp;
				s->uregs[UREG_IP] = sc->cfi.nt_addr;
				s->uregs[UREG_SP] = sc->cfi.nt_sp;
				s->uregs[UREG_BP] = sc->cfi.nt_bp;
				s->dwarf_at = sc->cfi.nt_n - 1;
				s->flags |= SAMPLE_DWARF_AT;
			}
			copied = copy_stack(sc, base, want, compat);
			s->flags |= SAMPLE_DWARF;
			s->stack_len = copied;
		}
		if (sc->cfi.tramp) {
			uprobe_patch_copy(sc, base, s->stack_len & 0xffff, sc->cfi.ri0, compat);
			uprobe_patch_entry(sc, base, s->stack_len & 0xffff, sc->cfi.tramp);
		}
	} else {
		s->flags |= SAMPLE_CFI_TRUNC;
		if (r == CFI_DONE_LIMIT)
			s->flags |= SAMPLE_MAX_STACK;
		if (sampled)
			count(STAT_CFI_TRUNC);
	}
}

/* The end of a sample's walk: the record. */
static __always_inline int cfi_finish(struct scratch *sc, int r, const bool compat)
{
	__u32 nk = ((struct ev_sample *)sc->head)->nkernel;

	cfi_end(sc, r, true, compat);
	return compat ? send_sample(sc, nk, sc->cfi.n, true) : sample_send(nk, sc->cfi.n);
}

struct cfi_loop {
	struct scratch *sc;
};

/* A frame, per bpf_loop callback. One, not a block of CFI_FRAMES_PER_CALL:
 * the verifier follows a callback's body until its states converge, and 8
 * inlined steps there (on top of the walker's own 8) took on_cfi_walk's
 * load from 0.14 to 1.3-2.6 s on 6.18, delaying every recording's start;
 * one step loads in 0.19 s. The step's result goes to the slot (map
 * memory, a value the verifier does not track), not to the caller's stack:
 * there each of its constants was a state of its own for the verifier to
 * follow through the callback again (on_switch followed the step 28
 * times). */
static long cfi_block(__u32 i, struct cfi_loop *c)
{
	struct scratch *sc = c->sc;

	sc->cfi.done = cfi_step(sc, false);
	return sc->cfi.done != CFI_GO;
}

/* Up to n frames, a frame per bpf_loop callback (cfi_block): CFI_GO when
 * the walk goes on, else how it ended (CFI_DONE_*). Kernels with bpf_loop
 * only (5.17). */
static __always_inline int cfi_walk_frames(struct scratch *sc, __u32 n)
{
	struct cfi_loop c = {.sc = sc};

	sc->cfi.done = CFI_GO;
	bpf_loop(n, cfi_block, &c, 0);
	return sc->cfi.done;
}

/* A whole walk in this program, for a program that cannot tail-call the
 * perf_event walkers (the off-CPU switch program, a tp_btf one): returns how
 * it ended (CFI_DONE_*), for cfi_end. */
static __always_inline int cfi_walk_loop(struct scratch *sc)
{
	/* cfi_step ends it at max_stack frames. */
	int r = cfi_walk_frames(sc, max_stack + 1);

	return r == CFI_GO ? CFI_DONE_LIMIT : r;
}

/* The walk's state from the record's header, kernel ips and stack copy,
 * in place: its first frame, the leaf. */
static __always_inline void cfi_begin(struct scratch *sc, __u32 tgid, __u32 nk, __u32 copied)
{
	struct ev_sample *s = (struct ev_sample *)sc->head;
	struct cfi_state *st = &sc->cfi;

	st->pc = st->addr = s->uregs[UREG_IP];
	st->sp = st->sp0 = s->uregs[UREG_SP];
	st->bp = s->uregs[UREG_BP];
	st->copied = copied;
	st->tgid = tgid;
	st->nk = nk;
	st->n = 1;
	st->calls = 0;
	st->ri = st->ri0; /* tramp and ri0: the sampler's uprobe_regs */
	st->notable = st->nt_n = 0;
	st->vma_done = 0;
	st->py = 0;
	st->jvm = 0;
	st->v8 = 0;
	st->jvm_slot = JVM_SLOT_SAMPLE;
	st->m_start = st->m_end = 0;
	{
		__u32 ku = CFI_GEN_USER, kb = CFI_GEN_BPF;
		__u64 *gu = bpf_map_lookup_elem(&cfi_gen, &ku);
		__u64 *gb = bpf_map_lookup_elem(&cfi_gen, &kb);

		/* A pair no entry has: a generation of 2^32 changes would be
		 * needed for the sum to come back to an old one. */
		st->gen = (gu ? *gu : 0) + ((gb ? *gb : 0) << 32);
	}
	sc->win_lo = sc->win_len = 0;
	if (nk < MAX_FRAMES)
		s->ips[nk] = st->pc;
}

/* From the sampler, with the record's header, kernel ips and stack copy in
 * place: starts the walk. Returns only when the tail call failed. */
static __always_inline void cfi_start(void *ctx, struct scratch *sc, __u32 tgid, __u32 nk,
				      __u32 copied, const bool compat)
{
	cfi_begin(sc, tgid, nk, copied);
	count(STAT_CFI_WALKS);
	bpf_tail_call(ctx, &cfi_progs, compat ? 1 : 0);
	count(STAT_CFI_NO_PROG);
}

#endif
