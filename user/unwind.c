/* DWARF unwinding of copied user stacks with elfutils' libdwfl: the
 * process's mappings are the modules (their .eh_frame / .debug_frame CFI),
 * and the bytes BPF copied from sp serve as the process's memory. One Dwfl
 * per process, kept across samples: building one per sample (as perf 6.1
 * does) costs more than the unwinding. */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "user/unwind.h"
#include "user/util.h"

/* x86_64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

struct srcline {
	uint64_t pc;
	const char *file; /* owned by libdw */
	int line;
};

struct unwinder {
	Dwfl *dwfl;
	pid_t pid;
	bool attached;
	uint64_t reported_ns; /* last dwfl_linux_proc_report */
	/* The sample being unwound. */
	const uint64_t *regs;
	const unsigned char *stack;
	size_t stack_len;
	uint64_t *pcs;
	int max, n;
	uint64_t last_bp; /* rbp of the last frame DWARF produced */
	bool last_bp_ok;
	/* Source lines by address. */
	struct idtab line_tab;
	VEC(struct srcline) lines;
};

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static bool read_word(const struct unwinder *u, uint64_t addr, uint64_t *val)
{
	uint64_t sp = u->regs[UNWIND_SP];

	if (addr < sp || addr - sp > u->stack_len || u->stack_len - (addr - sp) < 8)
		return false;
	memcpy(val, u->stack + (addr - sp), 8);
	return true;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->pid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	uint64_t v;

	(void)dwfl;
	if (!read_word(arg, addr, &v))
		return false;
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Word r[2] = {u->regs[UNWIND_BP], u->regs[UNWIND_SP]};

	return dwfl_thread_state_registers(thread, REG_RBP, 2, r) &&
	       (dwfl_thread_state_register_pc(thread, u->regs[UNWIND_IP]), true);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int report(struct unwinder *u)
{
	int err;

	dwfl_report_begin(u->dwfl);
	err = dwfl_linux_proc_report(u->dwfl, u->pid);
	dwfl_report_end(u->dwfl, NULL, NULL);
	u->reported_ns = now_ns(CLOCK_MONOTONIC);
	return err;
}

struct unwinder *unwinder_new(pid_t pid)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
	u->dwfl = dwfl_begin(&proc_callbacks);
	if (!u->dwfl || report(u)) {
		if (u->dwfl)
			dwfl_end(u->dwfl);
		free(u);
		errno = ESRCH;
		return NULL;
	}
	u->attached = dwfl_attach_state(u->dwfl, NULL, pid, &thread_callbacks, u);
	if (!u->attached)
		debug("unwind: pid %d: dwfl_attach_state: %s", pid, dwfl_errmsg(-1));
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl);
	idtab_free(&u->line_tab);
	VEC_FREE(u->lines);
	free(u);
}

/* A module at pc; modules mapped since the last report (dlopen) are found
 * by reporting again, at most every 100 ms. */
static Dwfl_Module *module_at(struct unwinder *u, uint64_t pc)
{
	Dwfl_Module *m = dwfl_addrmodule(u->dwfl, pc);

	if (!m && now_ns(CLOCK_MONOTONIC) - u->reported_ns > 100000000ULL) {
		report(u);
		m = dwfl_addrmodule(u->dwfl, pc);
	}
	return m;
}

static int frame_cb(Dwfl_Frame *frame, void *arg)
{
	struct unwinder *u = arg;
	Dwarf_Addr pc;
	Dwarf_Word bp;
	bool activation;

	if (!dwfl_frame_pc(frame, &pc, &activation) || u->n >= u->max)
		return DWARF_CB_ABORT;
	u->pcs[u->n++] = pc;
	u->last_bp_ok = dwfl_frame_reg(frame, REG_RBP, &bp) == 0;
	u->last_bp = bp;
	return DWARF_CB_OK;
}

int unwind_dwarf(struct unwinder *u, const uint64_t regs[3], const void *stack, size_t stack_len,
		 uint64_t *pcs, int max, unsigned *flags)
{
	uint64_t bp, ra, next;
	int r, guard;

	*flags = 0;
	if (!u->attached || !regs[UNWIND_IP] || max <= 0)
		return 0;
	u->regs = regs;
	u->stack = stack;
	u->stack_len = stack_len;
	u->pcs = pcs;
	u->max = max;
	u->n = 0;
	u->last_bp_ok = false;
	module_at(u, regs[UNWIND_IP]);
	r = dwfl_getthread_frames(u->dwfl, u->pid, frame_cb, u);
	if (r == 0 || u->n >= max)
		return u->n;
	/* DWARF stopped before the root (code without CFI, such as JIT code,
	 * or a stack copy too short): frame pointers from there on. */
	*flags |= UNWIND_TRUNCATED;
	if (verbosity >= 2)
		debug("unwind: pid %d: DWARF stopped after %d frames: %s", u->pid, u->n,
		      dwfl_errmsg(-1));
	if (!u->n) {
		pcs[u->n++] = regs[UNWIND_IP];
		bp = regs[UNWIND_BP];
	} else if (u->last_bp_ok) {
		bp = u->last_bp;
	} else {
		return u->n;
	}
	for (guard = 0; u->n < max && guard < 256; guard++) {
		if (!read_word(u, bp + 8, &ra) || !read_word(u, bp, &next) || !ra)
			break;
		pcs[u->n++] = ra;
		if (next <= bp) /* frames go up the stack */
			break;
		bp = next;
	}
	return u->n;
}

uint64_t unwind_leaf_caller(struct unwinder *u, uint64_t ip, uint64_t sp, const void *stack,
			    size_t stack_len)
{
	uint64_t regs[3] = {ip, sp, 0}, ra;
	Dwfl_Module *m = module_at(u, ip);
	Dwarf_CFI *cfi;
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops;
	Dwarf_Addr bias;
	size_t nops;

	if (!m)
		return 0;
	cfi = dwfl_module_eh_cfi(m, &bias);
	if (!cfi)
		cfi = dwfl_module_dwarf_cfi(m, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, ip - bias, &frame))
		return 0;
	/* Only a CFA relative to rsp means the return address is where sp
	 * says: in a frameless leaf, a prologue or an epilogue. With a frame
	 * (CFA = rbp + 16) the frame-pointer walk finds the caller itself. */
	ra = 0;
	if (!dwarf_frame_cfa(frame, &ops, &nops) && nops == 1 && ops[0].atom == DW_OP_bregx &&
	    ops[0].number == REG_RSP) {
		uint64_t cfa = sp + (int64_t)ops[0].number2;

		u->regs = regs;
		u->stack = stack;
		u->stack_len = stack_len;
		if (!read_word(u, cfa - 8, &ra))
			ra = 0;
	}
	free(frame);
	return ra;
}

static bool line_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct unwinder *)ctx)->lines.v[id].pc == *(const uint64_t *)key;
}

int unwind_srcline(struct unwinder *u, uint64_t pc, const char **file, int *line)
{
	uint32_t id = idtab_find(&u->line_tab, hash_u64(pc), line_eq, u, &pc);
	struct srcline s = {pc, NULL, 0};

	if (id == UINT32_MAX) {
		Dwfl_Line *l = dwfl_getsrc(u->dwfl, pc);

		if (l)
			s.file = dwfl_lineinfo(l, NULL, &s.line, NULL, NULL, NULL);
		if (VEC_PUSH(u->lines, s) || idtab_insert(&u->line_tab, hash_u64(pc), u->lines.n - 1))
			return -ENOMEM;
		id = u->lines.n - 1;
	}
	if (!u->lines.v[id].file)
		return -ENOENT;
	*file = u->lines.v[id].file;
	*line = u->lines.v[id].line;
	return 0;
}
