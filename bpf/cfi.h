/* Compact x86-64 unwind tables compiled from a binary's CFI (.eh_frame, or
 * .debug_frame where it is the only CFI), shared by user/ (which builds them:
 * user/cfi_table.c) and by the BPF unwinder that will walk user stacks with
 * them at sample time, as the OpenTelemetry profiler's stack deltas and Parca
 * Agent's DWARF unwinder do. bpf/cfi_walk.bpf.h is that unwinder; the
 * maps are filled by user/cfi_maps.c.
 *
 * A table is one binary's: a sorted array of struct cfi_row. Row i covers
 * the ELF vaddrs [base + rows[i].pc_off, base + rows[i + 1].pc_off); the
 * last row is always CFI_ROW_NONE (the end of the last FDE), so a lookup
 * never stretches a row past its FDE; addresses below base are NONE too.
 * Consecutive rows with the same rules are merged: rows change only where
 * the rules do.
 *
 * Proposed BPF maps (kernel 5.10 floor):
 * - cfi_rows: BPF_MAP_TYPE_ARRAY of struct cfi_row, the tables concatenated
 *   (user space hands out slices, reusing those of unmapped binaries). One
 *   big array rather than an array of maps: 5.10's inner maps of one outer
 *   map must agree on max_entries unless BPF_F_INNER_MAP, and the sizes of
 *   tables vary by four orders of magnitude.
 * - cfi_tables: BPF_MAP_TYPE_ARRAY (not a hash: 5.10 allows perf_event
 *   programs only preallocated hash maps), table id -> struct
 *   cfi_table_info (the slice: first row, row count, base; nrows 0: free
 *   id). The id is user space's for a (device, inode), so processes that
 *   map a binary share it.
 * - cfi_mappings: BPF_MAP_TYPE_LPM_TRIE, key {prefixlen, tgid, pc} (tgid
 *   and pc big-endian) -> struct cfi_mapping: each executable mapping
 *   [start, end) of a process is stored as the ≤ 2 * 64 prefixes that cover
 *   it. A pc in no mapping (JIT code, anonymous memory) has no table.
 *
 * Lookup of a pc (per frame; the walk first tries the rows and mappings
 * earlier samples found, kept per CPU while cfi_gen below is unchanged:
 * struct cfi_cache in sampler.bpf.h): m = cfi_mappings[tgid, pc]; info =
 * cfi_tables[m->table]; off = pc - m->bias - info->base (as __u64: a pc
 * below base wraps and is >= 2^32, hence NONE); then a binary search of
 * the largest i < nrows with row(i).pc_off <= off, in a loop of at most
 * CFI_BSEARCH_STEPS iterations that the 5.10 verifier follows (each step a
 * bpf_map_lookup_elem of cfi_rows at first_row + mid, NULL-checked):
 *
 *	lo = 0, hi = nrows;              // invariant: row(lo).pc_off <= off
 *	for (i = 0; i < CFI_BSEARCH_STEPS && hi - lo > 1; i++) {
 *		mid = lo + (hi - lo) / 2;
 *		if (row(mid).pc_off <= off) lo = mid; else hi = mid;
 *	}
 *	// hi - lo > 1 here: the table was too big (user space prevents it)
 *
 * 20 steps cover 2^20 rows; user space splits a bigger table into several
 * cfi_tables entries of at most CFI_TABLE_MAX_ROWS rows each, each entry
 * with its own pc range in cfi_mappings. (The OTel profiler's alternative,
 * an index of 64 KiB pages to their first row, bounds the search by the
 * rows of one page instead.)
 *
 * The walk, per frame, from the sample's registers (pc, sp, bp) with
 * lookup address pc for the first frame:
 * 1. row = lookup(addr); NONE or FALLBACK, or a mapping without CFI
 *    (CFI_TABLE_NOMAP: JIT code, anonymous memory): one frame-pointer step
 *    (return address at rbp + 8, next rbp at rbp, sp = rbp + 16; only for
 *    an rbp at or above sp), then on with the CFI; no entry, table 0 (not
 *    loaded) or the /32 marker (a pc mapped since the last read): the table
 *    by the vma's file (cfi_files below, 5.17+), else the sample goes to
 *    DWARF (the walk goes on by frame pointers, for user space's
 *    fallback); END: the outermost frame, done.
 * 2. CFA: RSP: sp + 8 * cfa_off; RBP: bp + 8 * cfa_off; PLT: sp +
 *    8 * cfa_off + ((pc & 15) >= CFI_PLT_SPLIT ? 8 : 0) with the frame's
 *    own pc (not the lookup address). SIGNAL: see CFI_SIG_* below.
 * 3. The return address: the word at CFA - 8. rbp: if rbp_off != 0, the
 *    word at CFA + 8 * rbp_off, else unchanged. sp = CFA.
 * 4. A return address of 0 ends the walk; else it is the next frame's pc,
 *    looked up at pc - 1 (the call instruction: a noreturn call may be the
 *    last instruction of its function, and the return address then lies
 *    in the next function) except after a SIGNAL frame, whose "return
 *    address" is the exact interrupted pc.
 * Memory reads come from the already copied stack when they fall in it,
 * else from a window of stack read from the word to the end of its page (a
 * bpf_probe_read_user costs about as much for 1 KiB as for 8 bytes twice,
 * and the next frames' words are above); a failed read ends the walk
 * as truncated, and so does a CFA at or below sp (a caller's frame is
 * always above). The frame loop is bounded by MAX_FRAMES (bpf/events.h).
 * bpf/cfi_walk.bpf.h implements this. */
#ifndef BPF_CFI_H
#define BPF_CFI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* kind of struct cfi_row */
enum cfi_row_kind {
	CFI_ROW_NONE = 0,     /* no FDE covers this: code without CFI, or a gap between FDEs */
	CFI_ROW_RSP = 1,      /* CFA = rsp + 8 * cfa_off */
	CFI_ROW_RBP = 2,      /* CFA = rbp + 8 * cfa_off */
	CFI_ROW_PLT = 3,      /* a .plt entry: CFA = rsp + 8 * cfa_off + (pc & 15 >= 11 ? 8 : 0) */
	CFI_ROW_SIGNAL = 4,   /* __restore_rt: the caller's registers are in the ucontext at rsp */
	CFI_ROW_FALLBACK = 5, /* CFI the other kinds cannot express (DRAP, other expressions,
			       * an rbp or return address saved elsewhere): unwindable only
			       * by a fallback (frame pointers), never guessed */
	CFI_ROW_END = 6,      /* the return address is undefined: the outermost frame (_start,
			       * a thread's clone), the walk is complete */
};

struct cfi_row {
	__u32 pc_off; /* first ELF vaddr of the row, minus the table's base */
	__u8 kind;    /* enum cfi_row_kind */
	/* RSP, RBP, PLT: rbp saved at CFA + 8 * rbp_off (-1024..-8); 0: rbp
	 * unchanged (the "same value" rule; a save can never be at CFA + 0,
	 * the caller's frame, nor at CFA - 8, the return address). 0 in the
	 * other kinds. */
	__s8 rbp_off;
	/* RSP, RBP, PLT: the CFA's offset from its register in 8-byte units
	 * (x86-64 code moves rsp by whole words, -262144..262136 bytes); 0 in
	 * the other kinds. */
	__s16 cfa_off;
};

/* Binary search steps of a lookup, and so the most rows of one cfi_tables
 * entry. */
#define CFI_BSEARCH_STEPS  20
#define CFI_TABLE_MAX_ROWS (1u << CFI_BSEARCH_STEPS)

/* CFI_ROW_PLT: the push of a lazy-binding .plt entry (16 bytes: jmp *GOT;
 * push $index; jmp PLT0) is at entry offset 6 and the jmp after it at 11,
 * so from 11 on one more word is on the stack. */
#define CFI_PLT_SPLIT 11

/* CPython's perf trampoline (-X perf, 3.12 on: Objects/asm_trampoline.S,
 * copied side by side into anonymous memory, one per code object, each
 * named in /tmp/perf-PID.map): "sub $8,%rsp; call *%rcx; add $8,%rsp;
 * ret", as pyenv's 3.12.1 and 3.13.0 build it. No frame record and no CFI,
 * so neither a frame-pointer step nor libdwfl passes it; its frame is known
 * from its code. Its 11 bytes from PY_TRAMP_RET before a return address
 * (two little-endian words, the second's low 3 bytes): at that return
 * address the caller's CFA is sp + PY_TRAMP_CFA, rbp untouched. */
#define PY_TRAMP_LO  0x8348d1ff08ec8348ULL /* 48 83 ec 08 ff d1 48 83 */
#define PY_TRAMP_HI  0xc308c4ULL	   /* c4 08 c3 */
#define PY_TRAMP_RET 6
#define PY_TRAMP_CFA 16
static inline int py_tramp_code(const __u64 code[2])
{
	return code[0] == PY_TRAMP_LO && (code[1] & 0xffffff) == PY_TRAMP_HI;
}

/* CFI_ROW_SIGNAL: rsp points at the struct ucontext the kernel pushed (its
 * pretcode, __restore_rt's address, was popped by the handler's return).
 * Offsets in it of uc_mcontext's saved rbp, rsp and rip (glibc's CFI of
 * __restore_rt says the same): the next frame's bp, sp (its CFA) and exact
 * pc. */
#define CFI_SIG_RBP 120
#define CFI_SIG_RSP 160
#define CFI_SIG_RIP 168

/* The page index of a table (as the OpenTelemetry profiler's): for each
 * 2^CFI_PAGE_SHIFT bytes of its pc_off range, the row of the page's first
 * byte (the largest i with pc_off <= the page's start; 0 if none), kept in
 * cfi_rows too, in the pc_off of the entries after the table's rows. A
 * lookup searches only rows [idx[p], idx[p + 1] + 1): a few steps instead
 * of up to 20, each of which was a cache miss in a big table (a lookup in
 * libc's cost ~650 ns). */
#define CFI_PAGE_SHIFT 10

/* Value of cfi_tables: one table, or one slice of a big one. */
struct cfi_table_info {
	__u32 first_row; /* in cfi_rows */
	__u32 nrows;	 /* at most CFI_TABLE_MAX_ROWS; the last is CFI_ROW_NONE */
	__u64 base;	 /* ELF vaddr that pc_off counts from */
	__u32 idx_first; /* in cfi_rows: the page index's first entry */
	__u32 idx_n;	 /* its entries (0: no index, the whole table is searched) */
	__u32 idx_page0; /* the page (pc_off >> CFI_PAGE_SHIFT) of its first entry */
	__u32 pad;
};

/* Key of cfi_mappings (an LPM trie: prefixlen counts bits of tgid, then
 * pc, both big-endian so that a prefix is a range of pcs of one process). */
struct cfi_mapping_key {
	__u32 prefixlen; /* 32 + bits of pc; a lookup uses 96 */
	__u32 tgid_be;
	__u64 pc_be;
};

/* Value of cfi_mappings: an executable mapping of a process. table 0: a
 * file-backed mapping whose table is not loaded (yet, or out of budget):
 * the walk stops there and the sample takes the DWARF path (stack copy,
 * SAMPLE_CFI_NOTABLE). */
struct cfi_mapping {
	__u64 bias;  /* pc - bias is the ELF vaddr (the load bias; 0 for ET_EXEC) */
	__u32 table; /* key of cfi_tables; 0: not loaded; CFI_TABLE_*: see below */
	__u32 pad;
	/* The whole range this value holds for (of which the entry's prefix is
	 * a piece): the walk keeps the last one and looks no further while the
	 * frames stay in it, as they mostly do (a trie lookup per frame was
	 * most of the walk's cost). */
	__u64 start, end;
};

/* An executable mapping without CFI: JIT code and other anonymous memory, a
 * file that is no ELF or has no CFI. Its pcs take a frame-pointer step. */
#define CFI_TABLE_NOMAP 0xffffffffu
/* Each process whose mappings are loaded also has a /32 entry (its tgid,
 * any pc) with this table: a pc in none of its executable mappings as user
 * space last read them finds it. That is code mapped since (the libraries
 * its dynamic loader maps after the read, a dlopen, JIT code) or a garbage
 * return address: the table by the vma's file (5.17+; anonymous memory
 * then takes a frame-pointer step), else the sample is copied for DWARF
 * unwinding, as for a table 0. Never a frame-pointer step without knowing:
 * libc has no frame pointers, and the compat walker (no bpf_find_vma) cut
 * the stacks of every new process short until the next read of its maps.
 * A process with no entry at all is one user space has not loaded yet (its
 * first samples): the same, with cfi_pcache. */
#define CFI_TABLE_MARKER 0xfffffffeu

/* A mapping the trie does not have (a process user space has not loaded
 * yet, a library mapped since): the walk finds its vma (bpf_find_vma,
 * 5.17+) and the table of its file here, keyed by the vma's
 * vm_file->f_inode (device in the kernel's encoding, major << 20 | minor:
 * what /proc/PID/maps shows, also on overlayfs, whose vmas map the
 * layer's file). The [vdso] (no file) is (0, 0). One entry per loaded
 * table, idle ones included, filled by user/cfi_maps.c. */
#define CFI_FILE_SEGS	8 /* PT_LOAD segments kept (the bias of a mapping) */
#define CFI_FILE_SLICES 4 /* slices of a split table (4 Mi rows) */

struct cfi_file_key {
	__u32 dev; /* MAJOR << 20 | MINOR, as the kernel's dev_t */
	__u32 pad;
	__u64 ino;
};

struct cfi_file {
	/* The file as built: an inode number freed and reused for another
	 * file must not find this table. Not checked for the vdso. */
	__u64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 nsegs, nslices;
	__u32 pad;
	/* File offsets [off_lo, off_hi) hold vaddrs off + delta: a mapping
	 * at vm_start of offset vm_pgoff << 12 has the bias vm_start -
	 * (offset + delta). */
	struct {
		__u64 off_lo, off_hi, delta;
	} seg[CFI_FILE_SEGS];
	/* Slice k (key of cfi_tables) covers vaddrs [lo[k], lo[k + 1]); lo[0]
	 * is 0. */
	__u64 slice_lo[CFI_FILE_SLICES];
	__u32 slice_id[CFI_FILE_SLICES];
};

/* bpf_find_vma works once per sample: from the perf_event's interrupt it
 * leaves the mmap lock to an irq_work, and until that has run (after the
 * sample) the next call fails with EBUSY. So each sample of a process not
 * loaded yet finds one new mapping, kept here (per tgid, for its later
 * samples and the rest of its walks) until user space has loaded it. */
#define CFI_PCACHE_N 8
struct cfi_pcache {
	struct {
		__u64 start, end, bias;
		__u32 table, slice;
		/* The file whose table it is: still in cfi_files with this
		 * table as its slice, or the id may have gone to another
		 * binary's. */
		struct cfi_file_key file;
	} e[CFI_PCACHE_N];
	__u32 n, next; /* entries used; the one to replace when full */
};

/* cfi_gen (an array of two u64): the walk's per-CPU caches of rows and
 * mappings are valid only while it is unchanged. Entry CFI_GEN_USER is
 * user space's (user/cfi_maps.c adds 1 after it changes mappings or
 * frees a table id), CFI_GEN_BPF the sampler's (1 added at each exec):
 * two entries, so that neither's update overwrites the other's. */
#define CFI_GEN_USER 0
#define CFI_GEN_BPF  1

/* Frames per walker invocation (and per bpf_loop block), and the compat
 * walker's invocations: the kernel allows 32 tail calls in a chain
 * (MAX_TAIL_CALL_CNT, 33 since 5.17), one of which is the sampler's. 8, not
 * 5: a shallow stack (gzip's 7 frames and its end) is walked in one
 * invocation, with no bpf_loop call (docs/benchmarks.md); the verifier
 * follows the loop's 8 steps. */
#define CFI_FRAMES_PER_CALL 8
#define CFI_MAX_CALLS	    30
#define CFI_COMPAT_FRAMES   ((CFI_MAX_CALLS + 1) * CFI_FRAMES_PER_CALL)

#endif
