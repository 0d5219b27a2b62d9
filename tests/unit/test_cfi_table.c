/* The unwind tables of user/cfi_table.c: built for every file this process
 * has mapped, checked row by row against libdw's own evaluation of the CFI,
 * and walked (cfi_walk, the steps the BPF unwinder will take) over stacks
 * of this process captured as BPF would copy them: in a chain of functions
 * without frame pointers, through libc's qsort, in functions that keep a
 * frame pointer, in a signal handler (through __restore_rt) and in a .plt
 * entry. Every frame must match what user/unwind.c's libdwfl unwinder finds
 * on the same copy.
 *
 * With --bench FILE...: each file's table figures and its build time
 * (median of 5), for scripts/bench-cfi-tables.sh. With --check STRIDE
 * FILE...: each file's table against libdw at every row's first and last
 * address and every STRIDE-th between. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "capture.h"
#include "user/cfi_table.h"
#include "user/unwind.h"

#define MAXPCS	128
#define MAXOBJS 64

/* The tables of the files this process maps, and its executable mappings. */
static struct obj {
	char path[256];
	struct cfi_table t;
	int err;
} objs[MAXOBJS];
static int nobjs;
static struct cfi_map maps[MAXOBJS * 2];
static size_t nmaps;
static struct unwinder *uw;
static long frames_compared, samples_compared;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Under valgrind, signal handlers run on frames valgrind builds itself,
 * and copying the stack from a handler reads the gap it leaves below them. */
static int under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

/* ---- The tables of this process's files, from dl_iterate_phdr. ---- */

static int add_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL;
	struct obj *o;
	int fd, i;

	(void)size, (void)arg;
	if (nobjs == MAXOBJS)
		return 1;
	/* The main program has no name; the vDSO has no file. */
	if (!path && nobjs == 0)
		path = "/proc/self/exe";
	if (!path || path[0] != '/')
		return 0;
	o = &objs[nobjs++];
	snprintf(o->path, sizeof(o->path), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	o->err = fd < 0 ? -errno : cfi_table_build_fd(fd, &o->t);
	if (fd >= 0)
		close(fd);
	if (o->err)
		return 0;
	for (i = 0; i < info->dlpi_phnum && nmaps < MAXOBJS * 2; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			maps[nmaps++] = (struct cfi_map){
			    .start = info->dlpi_addr + ph->p_vaddr,
			    .end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
			    .bias = info->dlpi_addr,
			    .table = &o->t,
			};
	}
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	const struct cfi_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void load_tables(void)
{
	int i;

	dl_iterate_phdr(add_obj, NULL);
	qsort(maps, nmaps, sizeof(maps[0]), cmp_map);
	for (i = 0; i < nobjs; i++)
		fprintf(stderr, "# %s: %d, %zu FDEs, %zu rows, %zu fallback\n", objs[i].path,
			objs[i].err, objs[i].t.stats.fdes, objs[i].t.stats.rows,
			objs[i].t.stats.fallback_rows);
}

/* The table of the library whose file name starts with prefix. */
static struct obj *obj_named(const char *prefix)
{
	int i;

	for (i = 0; i < nobjs; i++) {
		const char *base = strrchr(objs[i].path, '/');

		if (base && !strncmp(base + 1, prefix, strlen(prefix)))
			return &objs[i];
	}
	return NULL;
}

/* ---- The tables themselves. ---- */

static void check_table_shape(const struct cfi_table *t, const char *what)
{
	size_t i, bad_order = 0, bad_merge = 0, fb = 0, none = 0;

	CHECKF(t->nrows > 1 && t->stats.rows == t->nrows, "%s: %zu rows", what, t->nrows);
	if (t->nrows < 2)
		return;
	CHECK(t->rows[0].pc_off == 0 && t->rows[0].kind != CFI_ROW_NONE);
	CHECK(t->rows[t->nrows - 1].kind == CFI_ROW_NONE);
	CHECK(t->stats.bytes == t->nrows * sizeof(struct cfi_row) && sizeof(struct cfi_row) == 8);
	CHECK(t->stats.fdes > 0 && t->stats.raw_rows >= t->stats.fdes);
	for (i = 0; i < t->nrows; i++) {
		const struct cfi_row *r = &t->rows[i], *p = i ? &t->rows[i - 1] : NULL;

		if (p && p->pc_off >= r->pc_off)
			bad_order++;
		if (p && p->kind == r->kind && p->cfa_off == r->cfa_off && p->rbp_off == r->rbp_off)
			bad_merge++;
		fb += r->kind == CFI_ROW_FALLBACK;
		none += r->kind == CFI_ROW_NONE;
	}
	CHECKF(!bad_order, "%s: %zu rows out of order", what, bad_order);
	CHECKF(!bad_merge, "%s: %zu rows not merged", what, bad_merge);
	CHECK(fb == t->stats.fallback_rows && none == t->stats.none_rows);
}

static uint64_t vs_checked, vs_bad;

/* The table and libdw agree at vaddr a. */
static void check_addr(const char *path, const struct cfi_table *t, Dwarf_CFI *cfi, uint64_t a)
{
	struct cfi_row want = cfi_classify(cfi, a, NULL), got = cfi_table_lookup(t, a);

	vs_checked++;
	if (want.kind == got.kind && want.cfa_off == got.cfa_off && want.rbp_off == got.rbp_off)
		return;
	if (vs_bad++ < 5)
		fprintf(stderr,
			"%s+%#llx: table kind %u cfa %d rbp %d, libdw kind %u cfa %d rbp %d\n",
			path, (unsigned long long)a, got.kind, got.cfa_off, got.rbp_off, want.kind,
			want.cfa_off, want.rbp_off);
}

/* The table against libdw at every row's first and last address (where an
 * off-by-one would show), and at every stride-th address in between. libdw
 * reads the CFI the table was built from: .eh_frame, or .debug_frame. */
static void check_table_vs_libdw(const char *path, const struct cfi_table *t, unsigned stride)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Dwarf *dw = NULL;
	Dwarf_CFI *cfi = NULL;
	uint64_t end, a;
	Elf *e;
	size_t i;

	CHECK(fd >= 0);
	if (fd < 0 || !t->nrows)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && t->stats.section && !strcmp(t->stats.section, ".debug_frame")) {
		dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
		cfi = dw ? dwarf_getcfi(dw) : NULL;
	} else if (e) {
		cfi = dwarf_getcfi_elf(e);
	}
	CHECK(cfi != NULL);
	if (!cfi)
		goto out;
	vs_checked = vs_bad = 0;
	for (i = 0; i + 1 < t->nrows; i++) {
		uint64_t lo = t->base + t->rows[i].pc_off, hi = t->base + t->rows[i + 1].pc_off;

		for (a = lo; a < hi - 1; a += stride)
			check_addr(path, t, cfi, a);
		check_addr(path, t, cfi, hi - 1);
	}
	/* Outside the table: no CFI, whatever libdw says. */
	end = t->base + t->rows[t->nrows - 1].pc_off;
	CHECK(cfi_table_lookup(t, t->base - 1).kind == CFI_ROW_NONE);
	CHECK(cfi_table_lookup(t, end).kind == CFI_ROW_NONE);
	CHECK(cfi_table_lookup(t, end + (1ULL << 33)).kind == CFI_ROW_NONE);
	CHECK(cfi_table_lookup(t, 0).kind == CFI_ROW_NONE);
	fprintf(stderr, "# %s: %llu addresses checked against libdw\n", path,
		(unsigned long long)vs_checked);
	CHECKF(!vs_bad, "%llu of %llu addresses differ", (unsigned long long)vs_bad,
	       (unsigned long long)vs_checked);
out:
	if (dw)
		dwarf_end(dw);
	else if (cfi)
		dwarf_cfi_end(cfi);
	elf_end(e);
	close(fd);
}

static void test_tables(void)
{
	struct obj *libc = obj_named("libc.so"), *self = &objs[0];
	size_t i, kinds[8] = {0};

	CHECK(nobjs >= 2 && nmaps >= 2);
	CHECKF(self->err == 0, "%s: %d", self->path, self->err);
	CHECK(libc != NULL && libc->err == 0);
	if (!libc || self->err || libc->err)
		return;
	check_table_shape(&self->t, "self");
	check_table_shape(&libc->t, "libc");
	for (i = 0; i < libc->t.nrows; i++)
		kinds[libc->t.rows[i].kind & 7]++;
	/* libc has them all: __restore_rt's signal frame, a .plt, frames with
	 * rbp, and setcontext's CFI that only a fallback can follow. */
	CHECKF(kinds[CFI_ROW_RSP] && kinds[CFI_ROW_RBP] && kinds[CFI_ROW_PLT] &&
		   kinds[CFI_ROW_SIGNAL] == 1 && kinds[CFI_ROW_FALLBACK],
	       "rsp %zu rbp %zu plt %zu signal %zu fallback %zu", kinds[CFI_ROW_RSP],
	       kinds[CFI_ROW_RBP], kinds[CFI_ROW_PLT], kinds[CFI_ROW_SIGNAL],
	       kinds[CFI_ROW_FALLBACK]);
	/* _start says its return address is undefined: the root. */
	for (i = 0; i < self->t.nrows && self->t.rows[i].kind != CFI_ROW_END; i++)
		;
	CHECK(i < self->t.nrows);
	check_table_vs_libdw(self->path, &self->t, 1);
	check_table_vs_libdw(libc->path, &libc->t, 3);
}

/* A library with .debug_frame as its only CFI (built by the Makefile next
 * to this program, -fno-asynchronous-unwind-tables -nostdlib), its
 * .debug_frame plain and zlib-compressed. */
static void test_debug_frame(void)
{
	static const char *const names[] = {"libcfi_debug_frame.so", "libcfi_debug_frame_z.so"};
	char exe[512], path[600], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t k;

	CHECK(n > 0);
	if (n <= 0)
		return;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		struct cfi_table t = {0};
		int fd, err;

		snprintf(path, sizeof(path), "%s/%s", exe, names[k]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		CHECKF(fd >= 0, "%s: %s", path, strerror(errno));
		if (fd < 0)
			continue;
		err = cfi_table_build_fd(fd, &t);
		close(fd);
		CHECKF(err == 0, "%s: %d", path, err);
		if (err)
			continue;
		CHECKF(t.stats.section && !strcmp(t.stats.section, ".debug_frame"), "%s",
		       t.stats.section ? t.stats.section : "(none)");
		/* cfi_dfa and cfi_dfb; each CFA moves from its entry rule. */
		CHECKF(t.stats.fdes == 2 && t.nrows >= 5, "%zu FDEs, %zu rows", t.stats.fdes,
		       t.nrows);
		check_table_shape(&t, names[k]);
		check_table_vs_libdw(path, &t, 1);
		cfi_table_free(&t);
	}
}

/* Not ELF, not x86-64, no CFI: errors, not tables. */
static void test_errors(void)
{
	struct cfi_table t = {0};
	char buf[64] = "not an ELF file";
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_memory(buf, sizeof(buf));
	CHECK(e && cfi_table_build(e, &t) == -ENOEXEC && !t.rows);
	elf_end(e);
	CHECK(cfi_table_build_fd(-1, &t) == -ENOEXEC);
	cfi_table_free(&t);
	cfi_table_free(NULL);
}

/* ---- Walks, compared with libdwfl's. ---- */

/* Both unwinders on one sample: the same frames, to the root. */
static void compare(const char *what, const struct sample *s, int min_frames)
{
	uint64_t a[MAXPCS], b[MAXPCS];
	enum cfi_stop stop;
	unsigned flags;
	int na, nb, i, same = 0;

	CHECKF(s->len > 256, "%s: %zu bytes of stack", what, s->len);
	if (s->len <= 256 || !uw)
		return;
	na = unwind_dwarf(uw, s->regs, 0, s->stack, s->len, a, MAXPCS, &flags);
	nb = cfi_walk(maps, nmaps, s->regs, s->stack, s->len, b, MAXPCS, &stop);
	for (i = 0; i < na && i < nb && a[i] == b[i]; i++)
		same++;
	if (same != na || na != nb) {
		print_pcs("libdwfl", a, na);
		print_pcs("cfi_walk", b, nb);
	}
	CHECKF(flags == 0, "%s: libdwfl flags %u", what, flags);
	CHECKF(stop == CFI_STOP_END, "%s: cfi_walk stopped (%d) after %d frames", what, (int)stop,
	       nb);
	CHECKF(na == nb && same == na, "%s: %d frames by libdwfl, %d by cfi_walk, %d the same",
	       what, na, nb, same);
	CHECKF(na >= min_frames, "%s: %d frames", what, na);
	fprintf(stderr, "# %s: %d of %d frames the same:", what, same, na);
	for (i = 0; i < nb; i++) {
		uint64_t pc = i ? b[i] - 1 : b[i]; /* the call, for a return address */
		const char *base;
		Dl_info di;

		if (!dladdr((void *)(uintptr_t)pc, &di) || !di.dli_fname)
			fprintf(stderr, " ?");
		else if (di.dli_sname)
			fprintf(stderr, " %s", di.dli_sname);
		else
			base = strrchr(di.dli_fname, '/'),
			fprintf(stderr, " %s+%#llx", base ? base + 1 : di.dli_fname,
				(unsigned long long)(pc - (uint64_t)(uintptr_t)di.dli_fbase));
	}
	fputc('\n', stderr);
	frames_compared += same;
	samples_compared++;
}

/* main -> test_walk_chain -> ca -> cb -> cc, without frame pointers. */
static struct sample s_chain;

NOINLINE OMIT_FP int cc(int x)
{
	CAPTURE(&s_chain);
	return x * 7 + 1;
}

NOINLINE OMIT_FP int cb(int x)
{
	int r = cc(x + 1);

	return r * 5 + 3;
}

NOINLINE OMIT_FP int ca(int x)
{
	int r = cb(x + 2);

	return r * 3 + 2;
}

static void test_walk_chain(void)
{
	volatile int sink = ca(1);

	(void)sink;
	compare("chain", &s_chain, 7);
}

/* The same with frame pointers: CFA = rbp + 16 past each prologue. */
static struct sample s_framed;

NOINLINE KEEP_FP int fc(int x)
{
	volatile int v[4] = {x, x, x, x};

	CAPTURE(&s_framed);
	return v[0] + v[3];
}

NOINLINE KEEP_FP int fb(int x)
{
	volatile int v[8] = {x};

	return fc(v[0] + 1) + v[7];
}

NOINLINE KEEP_FP int fa(int x)
{
	volatile int v[2] = {x};

	return fb(v[0] + 2) + v[1];
}

static void test_walk_framed(void)
{
	struct obj *self = &objs[0];
	volatile int sink = fa(1);
	Dl_info di;

	(void)sink;
	compare("framed", &s_framed, 7);
	/* The captured ip lies where fc's CFA is rbp-based (gcc; clang
	 * functions keep a frame pointer too where asked). */
	if (s_framed.len && dladdr((void *)(uintptr_t)take_sample, &di) && !self->err)
		CHECK(cfi_table_lookup(&self->t,
				       s_framed.regs[UNWIND_IP] - (uint64_t)(uintptr_t)di.dli_fbase)
			  .kind == CFI_ROW_RBP);
}

/* Through libc: qa -> qsort (libc, no frame pointers) -> cmp -> qc. */
static struct sample s_qsort;

NOINLINE OMIT_FP int qc(int x)
{
	if (!s_qsort.stack)
		CAPTURE(&s_qsort);
	return x + 1;
}

NOINLINE OMIT_FP int cmp(const void *a, const void *b)
{
	return qc(*(const int *)a) - qc(*(const int *)b);
}

NOINLINE OMIT_FP int qa(int n)
{
	int v[16], i;

	for (i = 0; i < 16; i++)
		v[i] = (i * 7) % 16;
	qsort(v, (size_t)n, sizeof(v[0]), cmp);
	return v[0] + v[n - 1];
}

/* Defined when AddressSanitizer's runtime is linked (make test SANITIZE=1). */
extern void __asan_init(void) __attribute__((weak));

static void test_walk_qsort(void)
{
	volatile int sink = qa(16);

	(void)sink;
	compare("qsort", &s_qsort, 9);
}

/* A signal handler: handler <- __restore_rt <- the interrupted code in libc
 * (raise's tgkill, or the signal mask's restore) <- sa <- main. */
static struct sample s_signal;

static void on_signal(int sig)
{
	(void)sig;
	if (!s_signal.stack)
		CAPTURE(&s_signal);
}

NOINLINE OMIT_FP int sa(int x)
{
	raise(SIGUSR1);
	return x + 1;
}

static void test_walk_signal(void)
{
	struct sigaction act = {.sa_handler = on_signal}, old;
	volatile int sink;

	sigemptyset(&act.sa_mask);
	CHECK(sigaction(SIGUSR1, &act, &old) == 0);
	sink = sa(1);
	(void)sink;
	sigaction(SIGUSR1, &old, NULL);
	compare("signal", &s_signal, 8);
}

/* A fault at a function's first instruction: the interrupted pc is exact
 * and starts a row, so looking it up at pc - 1 (as for a return address)
 * would find the previous function's rules, or none. fault_entry has CFI
 * (an FDE: CFA = rsp + 8) and loads from address 0. */
__asm__(".text\n"
	".p2align 4\n"
	".globl fault_entry\n"
	".type fault_entry, @function\n"
	"fault_entry:\n"
	".cfi_startproc\n"
	"movq 0, %rax\n"
	"ret\n"
	".cfi_endproc\n"
	".size fault_entry, .-fault_entry\n");
void fault_entry(void);

static struct sample s_fault;
static sigjmp_buf fault_jmp;

static void on_fault(int sig)
{
	(void)sig;
	if (!s_fault.stack)
		CAPTURE(&s_fault);
	siglongjmp(fault_jmp, 1);
}

NOINLINE OMIT_FP int fault_caller(int x)
{
	volatile int v[4] = {x};

	fault_entry();
	return v[0] + v[3];
}

static void test_walk_fault(void)
{
	struct sigaction act = {.sa_handler = on_fault}, old;
	volatile int sink;

	sigemptyset(&act.sa_mask);
	CHECK(sigaction(SIGSEGV, &act, &old) == 0);
	if (!sigsetjmp(fault_jmp, 1)) {
		sink = fault_caller(1);
		(void)sink;
	}
	sigaction(SIGSEGV, &old, NULL);
	compare("fault", &s_fault, 8);
}

/* A noreturn call as its function's last instruction: the return address
 * is past the function's end (padding without CFI, or the next function),
 * and only the lookup at return address - 1 finds the caller's rules. */
static struct sample s_noreturn;
static jmp_buf noreturn_jmp;

NOINLINE OMIT_FP __attribute__((noreturn)) void nr_callee(int x)
{
	if (!s_noreturn.stack)
		CAPTURE(&s_noreturn);
	longjmp(noreturn_jmp, x + 1);
}

NOINLINE OMIT_FP __attribute__((noreturn)) void nr_caller(int x)
{
	volatile int v[8] = {x};

	nr_callee(v[0] + v[7]);
}

static void test_walk_noreturn(void)
{
	struct obj *self = &objs[0];
	Dl_info di;

	if (!setjmp(noreturn_jmp))
		nr_caller(1);
	compare("noreturn", &s_noreturn, 7);
	/* The premise: at the return address itself, other rules than at
	 * the call (here the caller has 40 bytes of locals). */
	if (s_noreturn.len > 16 && dladdr((void *)(uintptr_t)take_sample, &di) && !self->err) {
		uint64_t pcs[4], ra, fbase = (uint64_t)(uintptr_t)di.dli_fbase;
		enum cfi_stop stop;
		struct cfi_row at, before;

		if (cfi_walk(maps, nmaps, s_noreturn.regs, s_noreturn.stack, s_noreturn.len, pcs, 2,
			     &stop) == 2) {
			ra = pcs[1] - fbase;
			at = cfi_table_lookup(&self->t, ra);
			before = cfi_table_lookup(&self->t, ra - 1);
			CHECKF(at.kind != before.kind || at.cfa_off != before.cfa_off,
			       "the same rules at and before %#llx: kind %u cfa %d",
			       (unsigned long long)ra, at.kind, at.cfa_off);
		}
	}
}

/* A .plt entry "called" from the chain's sampled instruction: the chain's
 * stack under one more return address, at the entry's first instruction
 * (return address at sp) and past its push (at sp + 8). */
static void test_walk_plt(void)
{
	static const int at[] = {0, 6, 11};
	struct sample s;
	uint64_t plt, ent;
	size_t size = 0, k;
	char what[32];

	plt = find_plt(&size);
	if (!plt || size < 48) {
		SKIP_TEST(test_walk_plt,
			  "no .plt in this program (linked with -z now or -fno-plt?)");
		return;
	}
	CHECK(s_chain.len > 256);
	if (s_chain.len <= 256)
		return;
	ent = plt + 16; /* the first entry after PLT0 */
	for (k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		size_t extra = at[k] >= CFI_PLT_SPLIT ? 16 : 8;

		s.len = s_chain.len + extra;
		s.stack = malloc(s.len);
		CHECK(s.stack != NULL);
		if (!s.stack)
			return;
		memset(s.stack, 0x5a, extra);
		memcpy(s.stack + extra - 8, &s_chain.regs[UNWIND_IP], 8);
		memcpy(s.stack + extra, s_chain.stack, s_chain.len);
		s.regs[UNWIND_IP] = ent + at[k];
		s.regs[UNWIND_SP] = s_chain.regs[UNWIND_SP] - extra;
		s.regs[UNWIND_BP] = s_chain.regs[UNWIND_BP];
		snprintf(what, sizeof(what), "plt+%d", at[k]);
		compare(what, &s, 8);
		free(s.stack);
	}
}

/* Copies cut short: the walk is a prefix of the full one, stops on the
 * read it cannot do, and reads nothing outside the copy (each copy is a
 * malloc of exactly its length, for valgrind and ASan). Garbage registers
 * end it too. */
static void test_walk_short(void)
{
	uint64_t full[MAXPCS], pcs[MAXPCS];
	enum cfi_stop stop;
	int nfull, n, bad = 0;
	size_t len;
	/* qsort's, deeper, unless AddressSanitizer's qsort left none. */
	const struct sample *s = s_qsort.len ? &s_qsort : &s_chain;

	CHECK(s->len > 256);
	if (s->len <= 256)
		return;
	nfull = cfi_walk(maps, nmaps, s->regs, s->stack, s->len, full, MAXPCS, &stop);
	CHECK(stop == CFI_STOP_END);
	for (len = 0; len <= s->len; len += 8) {
		unsigned char *copy = malloc(len ? len : 1);

		if (!copy)
			break;
		memcpy(copy, s->stack, len);
		n = cfi_walk(maps, nmaps, s->regs, copy, len, pcs, MAXPCS, &stop);
		free(copy);
		if (n < 1 || n > nfull || memcmp(pcs, full, n * sizeof(*pcs)) ||
		    (stop != CFI_STOP_READ && !(stop == CFI_STOP_END && n == nfull)))
			bad++;
	}
	CHECKF(!bad, "%d short copies wrong", bad);
	CHECK(cfi_walk(maps, nmaps, s->regs, s->stack, s->len, pcs, 3, &stop) == 3 &&
	      stop == CFI_STOP_MAX && !memcmp(pcs, full, 3 * sizeof(*pcs)));
	CHECK(cfi_walk(maps, nmaps, s->regs, s->stack, s->len, pcs, 0, &stop) == 0);
	n = cfi_walk(maps, nmaps, (uint64_t[3]){0x1000, 0, 0}, NULL, 0, pcs, MAXPCS, &stop);
	CHECK(n == 1 && stop == CFI_STOP_NO_MAP);
	n = cfi_walk(maps, nmaps, s->regs, s->stack + 1, 5, pcs, MAXPCS, &stop);
	CHECK(n == 1 && stop == CFI_STOP_READ);
}

/* ---- --bench ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int bench(int argc, char **argv)
{
	int i, k, ret = 0;

	printf("%-44s %7s %8s %9s %8s %7s %9s\n", "file", "FDEs", "rows", "bytes", "fallback",
	       "none", "build ms");
	for (i = 0; i < argc; i++) {
		struct cfi_table t = {0};
		double ms[5];
		int fd = -1, err = 0;

		for (k = 0; k < 5 && !err; k++) {
			double t0;

			cfi_table_free(&t);
			fd = open(argv[i], O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				err = -errno;
				break;
			}
			/* Open, read and build: what a new binary costs. */
			t0 = now_ms();
			err = cfi_table_build_fd(fd, &t);
			ms[k] = now_ms() - t0;
			close(fd);
		}
		if (err) {
			printf("%-44s error %d (%s)\n", argv[i], err, strerror(-err));
			ret = 1;
			continue;
		}
		qsort(ms, 5, sizeof(ms[0]), cmp_double);
		printf("%-44s %7zu %8zu %9zu %8zu %7zu %9.1f\n", argv[i], t.stats.fdes,
		       t.stats.rows, t.stats.bytes, t.stats.fallback_rows, t.stats.none_rows,
		       ms[2]);
		printf("  %s; %zu rows before merging; fallback rows by reason before merging: "
		       "CFA register %zu, CFA expression %zu, CFA range %zu, rbp %zu, return "
		       "address %zu, signal %zu, libdw %zu\n",
		       t.stats.section, t.stats.raw_rows, t.stats.why[CFI_WHY_CFA_REG],
		       t.stats.why[CFI_WHY_CFA_EXPR], t.stats.why[CFI_WHY_CFA_RANGE],
		       t.stats.why[CFI_WHY_RBP], t.stats.why[CFI_WHY_RA],
		       t.stats.why[CFI_WHY_SIGNAL], t.stats.why[CFI_WHY_LIBDW]);
		cfi_table_free(&t);
	}
	return ret;
}

/* --check STRIDE FILE... */
static int check_files(int argc, char **argv)
{
	unsigned stride = argc > 0 ? (unsigned)strtoul(argv[0], NULL, 0) : 0;
	int i;

	if (!stride) {
		fprintf(stderr, "usage: --check STRIDE FILE...\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		struct cfi_table t = {0};
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), err;

		err = fd < 0 ? -errno : cfi_table_build_fd(fd, &t);
		if (fd >= 0)
			close(fd);
		CHECKF(!err, "%s: %d", argv[i], err);
		if (!err)
			check_table_vs_libdw(argv[i], &t, stride);
		cfi_table_free(&t);
	}
	return check_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int here, i;

	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return bench(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "--check"))
		return check_files(argc - 2, argv + 2);
	stack_end = find_stack_end((uint64_t)(uintptr_t)&here);
	if (!stack_end) {
		SKIP_TEST(test_all, "the stack is in no mapping of /proc/self/maps");
		return 0;
	}
	load_tables();
	uw = unwinder_new(getpid(), NULL);
	RUN_TEST(test_errors);
	RUN_TEST(test_tables);
	RUN_TEST(test_debug_frame);
	RUN_TEST(test_walk_chain);
	RUN_TEST(test_walk_framed);
	if (!__asan_init)
		RUN_TEST(test_walk_qsort);
	else
		SKIP_TEST(test_walk_qsort, "qsort is AddressSanitizer's interceptor, not libc's");
	if (!under_valgrind()) {
		RUN_TEST(test_walk_signal);
		RUN_TEST(test_walk_fault);
	} else {
		SKIP_TEST(test_walk_signal, "valgrind makes its own signal frames");
		SKIP_TEST(test_walk_fault, "valgrind makes its own signal frames");
	}
	RUN_TEST(test_walk_noreturn);
	RUN_TEST(test_walk_plt);
	RUN_TEST(test_walk_short);
	fprintf(stderr, "# %ld frames compared with libdwfl over %ld samples\n", frames_compared,
		samples_compared);
	unwinder_free(uw);
	for (i = 0; i < nobjs; i++)
		cfi_table_free(&objs[i].t);
	sample_free(&s_chain);
	sample_free(&s_framed);
	sample_free(&s_qsort);
	sample_free(&s_signal);
	sample_free(&s_fault);
	sample_free(&s_noreturn);
	CHECK_EXIT();
}
