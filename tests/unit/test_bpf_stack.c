/* The sampler's BPF stack against the oldest verifiers' limit (root).
 *
 * What it measures: the verifier refuses a program whose deepest chain of
 * BPF-to-BPF calls needs more than 512 bytes of stack ("combined stack size
 * of N calls is M"). Kernels up to 6.1 count each frame of the chain rounded
 * up to 32 bytes (at least 32, even for a frame of none); newer ones with the
 * JIT round to 16, so a program this host (6.18) loads can be refused by the
 * 5.10 and 6.1 guests (Debian's 6.1.192-3 refused on_cfi_walk at 544).
 *
 * The figures are the kernel's: each program is loaded with the verifier's
 * statistics (BPF_LOG_STATS), whose "stack depth A+B+C" line gives every
 * subprogram's own depth in the order of their first instruction; the call
 * graph is read from the instructions the kernel kept (xlated, with
 * func_info giving each subprogram's first instruction and name). The
 * statistics are printed after the instruction rewrites, which add an
 * inlined bpf_loop's three spill slots (24 bytes) to its caller's depth
 * after the stack check: those are taken off again. The deepest chain is
 * then summed as 5.10 and 6.1 sum it. The sums agree with what the guests
 * said: 544 for on_cfi_walk with the leaf decoder's spills (refused by
 * 6.1.192-3), 512 for on_cfi_walk and on_switch on main (loaded); this
 * host's depths were the 6.1 guest's for every walker (on_exit's alone
 * differed: 40 here, 24 there), so the test runs here, not in the guests.
 *
 * The test fails past 512, the refusal. It would fail within a margin of
 * one rounding step (32 bytes) if the programs had one: on_cfi_walk and
 * on_switch sit at 512 (main at 0d5d4f6 already), so any spill more on
 * their deepest chain is refused by 5.10 and 6.1; a line says so for each
 * program with less than 32 bytes to spare.
 *
 * The load is the widest the recorder makes: every program (the kernel's
 * variant and the compat one, the CFI walker, off-CPU), the CFI walk on. */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/events.h"
#include "check.h"
#include "sample.skel.h"

#define STACK_LIMIT  512
#define STACK_MARGIN 32
#define MAX_SUBPROGS 64
#define LOG_SIZE     (1u << 16)

struct graph {
	unsigned n;
	__u32 start[MAX_SUBPROGS]; /* first instruction */
	__u32 depth[MAX_SUBPROGS]; /* the verifier's, unrounded, at its check */
	__u64 calls[MAX_SUBPROGS]; /* bit j: calls subprogram j */
	__u64 inlined;		   /* bit i: an inlined bpf_loop's slots taken off */
	char name[MAX_SUBPROGS][64];
};

/* The depth 5.10 and 6.1 count for a frame (check_max_stack_depth). */
static unsigned frame_bytes(unsigned depth)
{
	return ((depth ? depth : 1) + 31) & ~31u;
}

/* The deepest chain from subprogram i: its bytes, the chain's names in path. */
static unsigned deepest(const struct graph *g, unsigned i, unsigned level, char *path, size_t size)
{
	unsigned best = 0, j, d;
	char sub[512] = "", best_path[512] = "";

	if (level > 8) /* the verifier's own bound on call depth */
		return 1u << 20;
	for (j = 0; j < g->n; j++) {
		if (!(g->calls[i] >> j & 1))
			continue;
		d = deepest(g, j, level + 1, sub, sizeof(sub));
		if (d > best) {
			best = d;
			snprintf(best_path, sizeof(best_path), "%s", sub);
		}
	}
	snprintf(path, size, "%s(%u)%s%s", g->name[i], g->depth[i], *best_path ? " > " : "",
		 best_path);
	return frame_bytes(g->depth[i]) + best;
}

static int subprog_at(const struct graph *g, __u32 insn)
{
	unsigned i;

	for (i = 0; i < g->n; i++)
		if (g->start[i] == insn)
			return (int)i;
	return -1;
}

/* The graph of the loaded program fd, its depths from the verifier's log. */
static int read_graph(int fd, const char *log, struct graph *g, const char *prog)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info), nfunc, ninsn, i;
	struct bpf_func_info *fi = NULL;
	struct bpf_insn *insn = NULL;
	struct btf *btf = NULL;
	const char *p = strstr(log, "stack depth ");
	int err = -1, j;

	memset(g, 0, sizeof(*g));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	nfunc = info.nr_func_info;
	ninsn = info.xlated_prog_len / sizeof(*insn);
	CHECKF(nfunc && nfunc <= MAX_SUBPROGS && ninsn, "%s: %u subprograms, %u insns", prog, nfunc,
	       ninsn);
	if (!nfunc || nfunc > MAX_SUBPROGS || !ninsn)
		return -1;
	fi = calloc(nfunc, sizeof(*fi));
	insn = calloc(ninsn, sizeof(*insn));
	if (!fi || !insn)
		goto out;
	memset(&info, 0, sizeof(info));
	info.nr_func_info = nfunc;
	info.func_info_rec_size = sizeof(*fi);
	info.func_info = (__u64)(unsigned long)fi;
	info.xlated_prog_len = ninsn * sizeof(*insn);
	info.xlated_prog_insns = (__u64)(unsigned long)insn;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		goto out;
	btf = btf__load_from_kernel_by_id(info.btf_id);
	g->n = nfunc;
	for (i = 0; i < nfunc; i++) {
		const struct btf_type *t = btf ? btf__type_by_id(btf, fi[i].type_id) : NULL;

		g->start[i] = fi[i].insn_off;
		snprintf(g->name[i], sizeof(g->name[i]), "%s",
			 t ? btf__name_by_offset(btf, t->name_off) : "?");
	}
	/* "stack depth 24+0+512": one figure a subprogram, in their order. */
	CHECKF(p, "%s: no stack depth in the verifier's statistics", prog);
	if (!p)
		goto out;
	p += strlen("stack depth ");
	for (i = 0; i < nfunc; i++) {
		char *end;

		g->depth[i] = strtoul(p, &end, 10);
		if (end == p)
			break;
		p = *end == '+' ? end + 1 : end;
	}
	CHECKF(i == nfunc, "%s: %u stack depths for %u subprograms", prog, i, nfunc);
	if (i != nfunc)
		goto out;
	/* BPF-to-BPF calls, and callbacks (bpf_loop's, bpf_find_vma's),
	 * whose frames the check counts as called where they are named:
	 * after the JIT the kernel keeps a call's relative offset in off
	 * (imm is the callee's index), a callback's in imm. */
	for (i = 0; i < ninsn; i++) {
		int caller = -1, callee;
		__u32 k;

		for (k = 0; k < nfunc; k++)
			if (g->start[k] <= i)
				caller = (int)k;
		/* An inlined bpf_loop (6.0's inline_bpf_loop): its counter
		 * check, `if r1 <= BPF_MAX_LOOPS goto +2; w0 = -E2BIG`. Its
		 * three spill slots are added to the caller's depth after
		 * the stack check, and are in the statistics: not counted. */
		if (caller >= 0 && i + 1 < ninsn && insn[i].code == (BPF_JMP | BPF_JLE | BPF_K) &&
		    insn[i].dst_reg == BPF_REG_1 && insn[i].imm == 1 << 23 &&
		    insn[i + 1].code == (BPF_ALU | BPF_MOV | BPF_K) && insn[i + 1].imm == -E2BIG &&
		    !(g->inlined >> caller & 1)) {
			g->inlined |= 1ull << caller;
			g->depth[caller] -= g->depth[caller] >= 24 ? 24 : g->depth[caller];
		}
		if (insn[i].code == (BPF_JMP | BPF_CALL) && insn[i].src_reg == BPF_PSEUDO_CALL)
			j = (int)i + 1 + (info.jited_prog_len ? insn[i].off : insn[i].imm);
		else if (insn[i].code == (BPF_LD | BPF_IMM | BPF_DW) &&
			 insn[i].src_reg == BPF_PSEUDO_FUNC)
			j = (int)i + 1 + insn[i].imm;
		else
			continue;
		callee = subprog_at(g, (__u32)j);
		CHECKF(caller >= 0 && callee >= 0, "%s: call at %u to %d: no subprogram", prog, i,
		       j);
		if (caller < 0 || callee < 0)
			goto out;
		g->calls[caller] |= 1ull << callee;
	}
	err = 0;
out:
	btf__free(btf);
	free(fi);
	free(insn);
	return err;
}

/* The programs loaded: all, or those named in BPF_STACK_PROGS
 * (comma-separated), for a guest whose kernel loads only some (5.10: the
 * compat ones, without bpf_loop). */
static bool wanted(const char *name)
{
	const char *list = getenv("BPF_STACK_PROGS"), *p;
	size_t n = strlen(name);

	if (!list || !*list)
		return true;
	for (p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static void test_sampler_stack(void)
{
	struct sample_bpf *skel;
	struct bpf_program *prog;
	struct graph g;
	char *logs[64] = {0}, path[512];
	unsigned n = 0, i, bytes;
	int ncpu = libbpf_num_possible_cpus(), err;

	skel = sample_bpf__open();
	CHECK(skel);
	if (!skel)
		return;
	skel->rodata->filter_pids = true;
	skel->rodata->stack_copy_walk = CFI_WALK_COPY;
	skel->rodata->stack_copy_dwarf = 32768;
	skel->rodata->cfi_walk = true;
	skel->rodata->offcpu_events = true;
	skel->rodata->offcpu_copy = 32768;
	skel->rodata->nr_cpus = ncpu;
	bpf_map__set_max_entries(skel->maps.scratch_map, 2 * ncpu);
	bpf_map__set_max_entries(skel->maps.py_scratch, 2 * ncpu);
	bpf_map__set_max_entries(skel->maps.events, 1 << 20);
	bpf_map__set_max_entries(skel->maps.cfi_rows, 4096);
	bpf_map__set_max_entries(skel->maps.cfi_files, bpf_map__max_entries(skel->maps.cfi_tables));
	bpf_map__set_max_entries(skel->maps.cfi_pcache, 64);
	bpf_map__set_max_entries(skel->maps.offcpu_kstacks, 1024);
	bpf_object__for_each_program(prog, skel->obj)
	{
		if (n == sizeof(logs) / sizeof(*logs) || !(logs[n] = calloc(1, LOG_SIZE)))
			break;
		bpf_program__set_autoload(prog, wanted(bpf_program__name(prog)));
		bpf_program__set_autoattach(prog, false);
		bpf_program__set_log_level(prog, 4); /* BPF_LOG_STATS */
		bpf_program__set_log_buf(prog, logs[n], LOG_SIZE);
		n++;
	}
	err = sample_bpf__load(skel);
	CHECKF(!err, "load: %s", strerror(-err));
	i = 0;
	bpf_object__for_each_program(prog, skel->obj)
	{
		const char *name = bpf_program__name(prog);

		if (err || i == n)
			break;
		if (!bpf_program__autoload(prog)) {
			i++;
			continue;
		}
		if (read_graph(bpf_program__fd(prog), logs[i++], &g, name))
			continue;
		bytes = deepest(&g, 0, 0, path, sizeof(path));
		printf("%-22s %3u bytes (limit %u): %s\n", name, bytes, STACK_LIMIT, path);
		printf("%-22s stack depth", "");
		for (unsigned k = 0; k < g.n; k++)
			printf(" %s(%u)", g.name[k], g.depth[k]);
		printf("\n");
		CHECKF(bytes <= STACK_LIMIT,
		       "%s: the deepest call chain takes %u of %u bytes on 5.10/6.1: refused there",
		       name, bytes, STACK_LIMIT);
		if (bytes <= STACK_LIMIT && bytes + STACK_MARGIN > STACK_LIMIT)
			printf("%-22s NOTE: %u bytes to spare, under a rounding step (%u): a spill "
			       "more on this chain is refused by 5.10 and 6.1\n",
			       name, STACK_LIMIT - bytes, STACK_MARGIN);
	}
	sample_bpf__destroy(skel);
	for (i = 0; i < n; i++)
		free(logs[i]);
}

int main(void)
{
	if (geteuid() != 0) {
		SKIP_TEST(test_sampler_stack, "not root");
		return 0;
	}
	RUN_TEST(test_sampler_stack);
	CHECK_EXIT();
}
