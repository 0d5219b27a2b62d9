/* The BPF CFI walk (bpf/cfi_walk.bpf.h) against libdwfl (user/unwind.c),
 * frame for frame, on the same records: the real sampler samples a child
 * workload with the walk on and a stack copy in each record (SAMPLE_DWARF);
 * the tables come from user/cfi_maps.c. Workloads: an FP-less program of
 * ours calling qsort, and the system's gzip. Both samplers (on_sample and
 * on_sample_compat) where the kernel has what each needs. Needs root and
 * BPF: skipped without, except under CI=true. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libgen.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample.skel.h"
#include "bpf/cfi.h"
#include "bpf/events.h"
#include "user/cfi_maps.h"
#include "user/unwind.h"
#include "user/util.h"

struct tally {
	pid_t pid;
	struct unwinder *u;
	unsigned long samples, cfi, end, trunc, notable, compared, mismatches, beyond_copy;
	unsigned long bpf_longer, dwfl_longer, dwfl_trunc, shown;
	uint64_t tramp_lo, tramp_hi; /* the [uprobes] page, with a uretprobe on */
	unsigned long tramp_left;    /* BPF return addresses still in it */
	unsigned long tramp_ip;	     /* samples taken in it */
};

static bool in_tramp(const struct tally *t, uint64_t pc)
{
	return pc >= t->tramp_lo && pc < t->tramp_hi;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct tally *t = ctx;
	const struct ev_sample *s = data;
	const unsigned char *stack;
	uint64_t pcs[MAX_FRAMES], regs[3];
	unsigned fl = 0;
	int n, i, nb, ncmp;

	if (len < sizeof(*s) || s->hdr.type != EV_SAMPLE || (pid_t)s->hdr.pid != t->pid)
		return 0;
	if (len < sizeof(*s) + (s->nkernel + s->nuser) * 8ul + s->stack_len)
		return 0;
	t->samples++;
	if (!(s->flags & SAMPLE_CFI) || !(s->flags & SAMPLE_DWARF))
		return 0;
	t->cfi++;
	t->end += !!(s->flags & SAMPLE_CFI_END);
	t->trunc += !!(s->flags & SAMPLE_CFI_TRUNC);
	t->notable += !!(s->flags & SAMPLE_CFI_NOTABLE);
	stack = (const unsigned char *)&s->ips[s->nkernel + s->nuser];
	memcpy(regs, s->uregs, sizeof(regs));
	n = unwind_dwarf(t->u, regs, s->hdr.time_ns, stack, s->stack_len, pcs, MAX_FRAMES, &fl);
	nb = s->nuser;
	ncmp = n < nb ? n : nb;
	t->dwfl_trunc += !!(fl & UNWIND_TRUNCATED);
	/* ips[0] may be in the trampoline: the code running. */
	t->tramp_ip += nb && in_tramp(t, s->ips[s->nkernel]);
	for (i = 1; i < nb; i++)
		t->tramp_left += in_tramp(t, s->ips[s->nkernel + i]);
	/* libdwfl knows no trampolines: it stops (or goes astray) at the
	 * first; the frames before it are compared. */
	for (i = 0; t->tramp_hi && i < n; i++)
		if (in_tramp(t, pcs[i])) {
			n = i + (i < nb && in_tramp(t, s->ips[s->nkernel + i]));
			ncmp = n < nb ? n : nb;
			break;
		}
	for (i = 0; i < ncmp; i++) {
		uint64_t b = s->ips[s->nkernel + i];

		t->compared++;
		if (b == pcs[i])
			continue;
		/* libdwfl past the copy (its frame-pointer fallback) is not
		 * CFI: not a disagreement of the two CFI walks. */
		if (fl & UNWIND_TRUNCATED) {
			t->beyond_copy++;
			continue;
		}
		/* Past a frame with no table the walk goes on by frame
		 * pointers, for user space to take only when the copy cannot
		 * be unwound: from there on it is no CFI walk. */
		if (s->flags & SAMPLE_CFI_NOTABLE) {
			t->compared--;
			break;
		}
		t->mismatches++;
		if (t->shown++ < 5) {
			int j;

			fprintf(stderr, "mismatch at frame %d (flags %#x, copy %u):\n  bpf:", i,
				s->flags, s->stack_len);
			for (j = 0; j < nb; j++)
				fprintf(stderr, " %llx",
					(unsigned long long)s->ips[s->nkernel + j]);
			fprintf(stderr, "\n  dwfl:");
			for (j = 0; j < n; j++)
				fprintf(stderr, " %llx", (unsigned long long)pcs[j]);
			fprintf(stderr, "\n");
		}
		break;
	}
	t->bpf_longer += nb > n;
	t->dwfl_longer += n > nb;
	return 0;
}

static char workload_dir[4096];
static char gzip_input[] = "/tmp/cfi-bpf-gzip-XXXXXX";

/* Whether pid's maps have an executable mapping of a file whose path has
 * needle; with needle NULL, an anonymous one (no name). */
static bool maps_exec_has(pid_t pid, const char *needle)
{
	char path[64], *buf = NULL, *line, *save = NULL;
	size_t len;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (read_path_all(path, 0, 1 << 20, &buf, &len))
		return false;
	for (line = strtok_r(buf, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char perms[8];
		unsigned long long ino = 1;
		int n = 0;

		if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %llu %n", perms, &ino, &n) < 2 ||
		    perms[2] != 'x')
			continue;
		found = needle ? strstr(line, needle) != NULL : !ino && !line[n];
	}
	free(buf);
	return found;
}

/* Forks argv, waits for its exec (its /proc/PID/exe is no longer ours),
 * then gives it time to map its libraries. */
static pid_t spawn(char *const argv[])
{
	char self[4096], exe[4096], path[64];
	ssize_t k;
	pid_t pid;
	int i;

	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[k > 0 ? k : 0] = 0;
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	for (i = 0; i < 200; i++) {
		k = readlink(path, exe, sizeof(exe) - 1);
		exe[k > 0 ? k : 0] = 0;
		if (k > 0 && strcmp(exe, self))
			break;
		usleep(1000);
	}
	/* The dynamic loader: until libc is mapped (slow in an emulated
	 * guest), then a little more for the rest of its work. */
	for (i = 0; i < 1000 && !maps_exec_has(pid, "/libc."); i++)
		usleep(2000);
	usleep(20000);
	/* Stopped until sampling starts: building the tables (slow in an
	 * emulated guest) must not eat the workload's run. */
	kill(pid, SIGSTOP);
	waitpid(pid, &i, WUNTRACED);
	return pid;
}

/* As spawn, but stopped (SIGSTOP) while its dynamic loader maps its
 * libraries: lib's code mapped, libc's not yet (split needs libwork.so,
 * then libc), found by stepping its system calls under ptrace. -1 when
 * that state never came. */
static pid_t spawn_partial(char *const argv[], const char *lib)
{
	int st, i;
	pid_t pid = fork();

	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	/* Its exec's stop, then each system call's entry and exit. */
	for (i = 0; i < 10000 && waitpid(pid, &st, 0) == pid && WIFSTOPPED(st); i++) {
		if (maps_exec_has(pid, lib) && !maps_exec_has(pid, "/libc.")) {
			ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)SIGSTOP);
			if (waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st))
				return pid;
			break;
		}
		if (maps_exec_has(pid, "/libc.") || ptrace(PTRACE_SYSCALL, pid, NULL, NULL))
			break;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* The file offset of a function of an ELF file, or 0. */
static uint64_t func_offset(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t vaddr = 0, off = 0;
	Elf_Scn *scn = NULL;
	size_t i, nph;
	Elf *e;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;

			if (gelf_getsym(d, i, &sym) &&
			    (nm = elf_strptr(e, sh.sh_link, sym.st_name)) && !strcmp(nm, name) &&
			    GELF_ST_TYPE(sym.st_info) == STT_FUNC)
				vaddr = sym.st_value;
		}
	}
	for (i = 0; e && vaddr && !elf_getphdrnum(e, &nph) && i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz)
			off = vaddr - ph.p_vaddr + ph.p_offset;
	}
	if (e)
		elf_end(e);
	close(fd);
	return off;
}

/* A uretprobe on path's function in pid, by the perf uprobe PMU (4.17+):
 * no BPF program, the kernel's trampoline is what matters. An fd or -1. */
static int uretprobe_on(pid_t pid, const char *path, const char *func)
{
	struct perf_event_attr a = {.size = sizeof(a)};
	char buf[64] = "";
	int type, bit = 0, fd;
	FILE *f;

	f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	if (!f || fscanf(f, "%d", &type) != 1) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	f = fopen("/sys/bus/event_source/devices/uprobe/format/retprobe", "r");
	if (f && fgets(buf, sizeof(buf), f))
		sscanf(buf, "config:%d", &bit);
	if (f)
		fclose(f);
	a.type = type;
	a.config = 1ULL << bit;
	a.uprobe_path = (uint64_t)(uintptr_t)path;
	a.probe_offset = func_offset(path, func);
	if (!a.probe_offset)
		return -1;
	fd = syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	return fd;
}

/* The [uprobes] page of a process, once it has one. */
static void find_tramp(struct tally *t)
{
	char path[64], *buf = NULL, *p;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)t->pid);
	if (read_path_all(path, 0, 1 << 20, &buf, &len))
		return;
	p = strstr(buf, "[uprobes]");
	if (p) {
		unsigned long long lo, hi;

		while (p > buf && p[-1] != '\n')
			p--;
		if (sscanf(p, "%llx-%llx", &lo, &hi) == 2) {
			t->tramp_lo = lo;
			t->tramp_hi = hi;
		}
	}
	free(buf);
}

/* The cases of run_case, combined as flags. */
enum {
	/* The compat sampler and walker (5.10's), not on_sample's. */
	CASE_COMPAT = 1 << 0,
	/* A row budget too small for libc, and no stack copy of the process's
	 * own: the walk must stop at libc (table 0) and copy the stack for
	 * DWARF itself. */
	CASE_NOTABLE = 1 << 1,
	/* A uretprobe on the workload's "level": its trampoline stands in the
	 * return addresses. */
	CASE_URET = 1 << 2,
	/* The walk takes no word from the copy (rodata cfi_read_copy off), it
	 * reads them all from user memory in windows, as beyond the copy. */
	CASE_WINDOWS = 1 << 3,
	/* The tables come from an earlier process of the same program, added
	 * and removed; this one is never added: the walk must find every table
	 * by its file (cfi_files), from its first sample, with no DWARF copy. */
	CASE_FRESH = 1 << 4,
	/* Added once, when its dynamic loader had mapped its first library
	 * but not libc yet, and never again: libc's pcs are in no mapping the
	 * tables know. They must go the DWARF way, not be walked by frame
	 * pointers (libc has none): the compat walker cut every such stack
	 * short until the next read of the maps. */
	CASE_PARTIAL = 1 << 5,
};

static int run_case(const char *name, char *const argv[], unsigned flags)
{
	const bool compat = flags & CASE_COMPAT, notable = flags & CASE_NOTABLE,
		   uret = flags & CASE_URET, windows = flags & CASE_WINDOWS,
		   fresh = flags & CASE_FRESH, partial = flags & CASE_PARTIAL;
	struct sample_bpf *skel = sample_bpf__open();
	struct perf_event_attr a = {
	    .type = PERF_TYPE_SOFTWARE,
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .size = sizeof(a),
	    .sample_period = 200000, /* ns: 5 kHz */
	    .disabled = 1,
	};
	struct tally t = {0};
	struct cfi_maps *cm = NULL;
	struct cfi_maps_stats ms;
	struct ring_buffer *rb = NULL;
	struct bpf_link *link = NULL;
	uint32_t rows = cfi_maps_rows_for_budget(notable ? 16384 : CFI_MAPS_DEFAULT_BUDGET), key;
	uint64_t st[STAT_NR] = {0};
	int err, pfd = -1, ufd = -1, stats_fd = -1, fd, status, ncpu = libbpf_num_possible_cpus();
	__u8 one = 1;

	CHECK(skel);
	if (!skel)
		return -1;
	skel->rodata->filter_pids = true;
	skel->rodata->follow_forks = false;
	skel->rodata->self_tgid = getpid();
	skel->rodata->stack_copy_walk = CFI_WALK_COPY;
	skel->rodata->stack_copy_dwarf = 32768;
	/* Each sample's stack copied for DWARF too, to check the walk
	 * against (the target is the only process sampled). */
	skel->rodata->dwarf_all = !notable;
	skel->rodata->cfi_walk = true;
	skel->rodata->cfi_read_copy = !windows;
	bpf_map__set_max_entries(skel->maps.scratch_map, ncpu);
	bpf_map__set_max_entries(skel->maps.events, 16 << 20);
	bpf_map__set_max_entries(skel->maps.cfi_rows, rows);
	bpf_map__set_max_entries(skel->maps.cfi_files, bpf_map__max_entries(skel->maps.cfi_tables));
	bpf_map__set_max_entries(skel->maps.cfi_pcache, 64);
	bpf_program__set_autoload(skel->progs.on_sample, !compat);
	bpf_program__set_autoload(skel->progs.on_sample_compat, compat);
	bpf_program__set_autoload(skel->progs.on_cfi_walk, !compat);
	bpf_program__set_autoload(skel->progs.on_cfi_walk_compat, compat);
	err = sample_bpf__load(skel);
	CHECKF(!err, "%s: load: %s", name, strerror(-err));
	if (err)
		goto out;
	key = compat ? 1 : 0;
	fd = bpf_program__fd(compat ? skel->progs.on_cfi_walk_compat : skel->progs.on_cfi_walk);
	CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.cfi_progs), &key, &fd, 0));

	t.pid = partial ? spawn_partial(argv, "/libwork.so") : spawn(argv);
	CHECKF(t.pid > 0, "%s: no state with libwork.so mapped and libc not", name);
	if (t.pid <= 0)
		goto out;
	CHECK(!bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &t.pid, &one, 0));
	err = cfi_maps_new(bpf_map__fd(skel->maps.cfi_rows), bpf_map__fd(skel->maps.cfi_tables),
			   bpf_map__fd(skel->maps.cfi_mappings), rows,
			   bpf_map__max_entries(skel->maps.cfi_tables), &cm);
	CHECK(!err);
	if (!err) {
		cfi_maps_set_files(cm, bpf_map__fd(skel->maps.cfi_files));
		cfi_maps_set_gen(cm, bpf_map__fd(skel->maps.cfi_gen));
	}
	if (!err && fresh) {
		pid_t first = spawn(argv);

		CHECK(!cfi_maps_add_process(cm, first));
		CHECK(!cfi_maps_remove_process(cm, first));
		kill(first, SIGKILL);
		kill(first, SIGCONT);
		waitpid(first, &status, 0);
		cfi_maps_get_stats(cm, &ms);
		CHECKF(ms.prefixes == 0 && ms.tables_idle >= 3, "%s: %llu idle tables", name,
		       (unsigned long long)ms.tables_idle);
	} else if (!err && !notable) {
		/* Every file "big": none built, all given table 0 for now (the
		 * vdso is no file), then replaced by the full add below. */
		CHECKF(cfi_maps_add_process_quick(cm, t.pid, 1) == -EAGAIN, "%s: quick add", name);
		cfi_maps_get_stats(cm, &ms);
		CHECKF(ms.tables <= 1 && ms.prefixes > 2,
		       "%s: quick add: %llu tables, %llu prefixes", name,
		       (unsigned long long)ms.tables, (unsigned long long)ms.prefixes);
	}
	if (!err && !fresh)
		err = cfi_maps_add_process(cm, t.pid);
	if (notable && err == -ENOSPC)
		err = 0;
	if (!err && !fresh) {
		/* Again (as after a dlopen): the same entries, tables kept. */
		struct cfi_maps_stats before;

		cfi_maps_get_stats(cm, &before);
		CHECK(!cfi_maps_add_process(cm, t.pid));
		cfi_maps_get_stats(cm, &ms);
		CHECKF(ms.prefixes == before.prefixes && ms.rows_used == before.rows_used &&
			   ms.tables == before.tables,
		       "%s: re-added: %llu prefixes, %llu rows (were %llu, %llu)", name,
		       (unsigned long long)ms.prefixes, (unsigned long long)ms.rows_used,
		       (unsigned long long)before.prefixes, (unsigned long long)before.rows_used);
	}
	CHECKF(!err, "%s: cfi_maps_add_process: %s", name, strerror(-err));
	if (uret) {
		ufd = uretprobe_on(t.pid, argv[0], "level");
		CHECKF(ufd >= 0, "uretprobe: %s", strerror(errno));
	}
	t.u = unwinder_new(t.pid, NULL);
	CHECK(t.u);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_record, &t, NULL);
	CHECK(rb);
	pfd = syscall(SYS_perf_event_open, &a, t.pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	CHECKF(pfd >= 0, "perf_event_open: %s", strerror(errno));
	if (err || !t.u || !rb || pfd < 0) {
		kill(t.pid, SIGKILL);
		kill(t.pid, SIGCONT);
		waitpid(t.pid, &status, 0);
		goto out;
	}
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME); /* 5.8+; the cost figures below */
	link = bpf_program__attach_perf_event(
	    compat ? skel->progs.on_sample_compat : skel->progs.on_sample, pfd);
	CHECK(link);
	ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0);
	kill(t.pid, SIGCONT);
	while (waitpid(t.pid, &status, WNOHANG) == 0) {
		if (uret && !t.tramp_hi)
			find_tramp(&t); /* mapped at the first hit */
		ring_buffer__poll(rb, 50);
	}
	ring_buffer__consume(rb);

	{
		int sfd = bpf_map__fd(skel->maps.stats);
		uint64_t *v = calloc(ncpu, sizeof(*v));
		uint32_t i;
		int c;

		for (i = 0; v && i < STAT_NR; i++)
			if (!bpf_map_lookup_elem(sfd, &i, v))
				for (c = 0; c < ncpu; c++)
					st[i] += v[c];
		free(v);
	}
	cfi_maps_get_stats(cm, &ms);
	printf(
	    "# %s%s%s%s%s%s: %lu samples, %lu walked by CFI with a copy: %lu reached END (%.1f%%), "
	    "%lu truncated, %lu no table; %lu frames compared, %lu mismatches, %lu beyond the "
	    "copy; bpf longer %lu, dwfl longer %lu (dwfl truncated %lu)\n",
	    name, compat ? " (compat)" : "", notable ? " (libc without table)" : "",
	    uret ? " (uretprobe on level)" : "", windows ? " (every word read, no copy)" : "",
	    fresh     ? " (never added: tables by file)"
	    : partial ? " (added before libc was mapped)"
		      : "",
	    t.samples, t.cfi, t.end, t.cfi ? 100.0 * t.end / t.cfi : 0.0, t.trunc, t.notable,
	    t.compared, t.mismatches, t.beyond_copy, t.bpf_longer, t.dwfl_longer, t.dwfl_trunc);
	printf("#   stats: walks %llu end %llu trunc %llu notable %llu fp-nomap %llu fp-none %llu "
	       "fp-fallback %llu read-err %llu no-prog %llu lost %llu by-file %llu; tables %llu, "
	       "%llu rows (%llu KiB), %llu prefixes, %llu without CFI, %llu not opened\n",
	       (unsigned long long)st[STAT_CFI_WALKS], (unsigned long long)st[STAT_CFI_END],
	       (unsigned long long)st[STAT_CFI_TRUNC], (unsigned long long)st[STAT_CFI_NOTABLE],
	       (unsigned long long)st[STAT_CFI_FP_NOMAP], (unsigned long long)st[STAT_CFI_FP_NONE],
	       (unsigned long long)st[STAT_CFI_FP_FALLBACK],
	       (unsigned long long)st[STAT_CFI_READ_ERR], (unsigned long long)st[STAT_CFI_NO_PROG],
	       (unsigned long long)st[STAT_LOST], (unsigned long long)st[STAT_CFI_BY_FILE],
	       (unsigned long long)ms.tables, (unsigned long long)ms.rows_used,
	       (unsigned long long)ms.bytes_used >> 10, (unsigned long long)ms.prefixes,
	       (unsigned long long)ms.no_cfi, (unsigned long long)ms.open_failed);
	CHECKF(t.cfi >= 20, "%s: only %lu samples walked", name, t.cfi);
	CHECKF(t.mismatches == 0, "%s: %lu mismatches", name, t.mismatches);
	{
		struct bpf_prog_info si = {0}, wi = {0};
		__u32 l1 = sizeof(si), l2 = sizeof(wi);

		bpf_obj_get_info_by_fd(
		    bpf_program__fd(compat ? skel->progs.on_sample_compat : skel->progs.on_sample),
		    &si, &l1);
		bpf_obj_get_info_by_fd(bpf_program__fd(compat ? skel->progs.on_cfi_walk_compat
							      : skel->progs.on_cfi_walk),
				       &wi, &l2);
		/* Tail-called programs run inside their caller's stats. */
		printf("#   cost: %.0f ns per sample, the walker's tail calls and a 32 KiB copy "
		       "included (run_time_ns); verified insns: sampler %u, walker %u\n",
		       si.run_cnt ? (double)si.run_time_ns / si.run_cnt : 0.0, si.verified_insns,
		       wi.verified_insns);
	}
	if (uret) {
		printf("#   uretprobe: trampolines left in BPF return addresses %lu (walker misses "
		       "%llu), samples taken in the trampoline %lu\n",
		       t.tramp_left, (unsigned long long)st[STAT_CFI_URETPROBE_MISS], t.tramp_ip);
		CHECKF(t.tramp_hi, "%s: no [uprobes] page", name);
		/* A sample in the trampoline (it is code) is walked by frame
		 * pointer and may lose the next; rare. */
		CHECKF(t.tramp_left * 100 <= t.cfi, "%s: %lu trampolines left", name, t.tramp_left);
	}
	if (fresh && !compat) {
		/* One mapping found per sample (bpf/cfi.h's cfi_pcache): the
		 * first samples may still miss nofp's, libc's or ld.so's. */
		CHECKF(t.notable <= 3 && st[STAT_CFI_BY_FILE] > 0,
		       "%s: %lu of %lu walks without table, %llu mappings found by file", name,
		       t.notable, t.cfi, (unsigned long long)st[STAT_CFI_BY_FILE]);
	} else if (fresh) {
		/* No bpf_find_vma: as before, every walk goes the DWARF way. */
		CHECKF(t.notable == t.cfi, "%s: %lu of %lu without table", name, t.notable, t.cfi);
	}
	if (notable) {
		CHECKF(t.notable == t.cfi && ms.out_of_budget > 0, "%s: %lu of %lu without table",
		       name, t.notable, t.cfi);
	} else if (partial) {
		/* Most stacks run through libc (start_thread,
		 * __libc_start_call_main): those met the marker. */
		CHECKF(t.trunc * 100 <= t.cfi, "%s: %lu of %lu walks cut short", name, t.trunc,
		       t.cfi);
		CHECKF(t.notable * 2 >= t.cfi, "%s: only %lu of %lu walks met libc unloaded", name,
		       t.notable, t.cfi);
	} else if (!fresh || !compat) {
		CHECKF(t.compared >= 3 * t.cfi, "%s: %lu frames compared", name, t.compared);
		CHECKF(t.end * 10 >= t.cfi * 9, "%s: %lu of %lu walks reached END", name, t.end,
		       t.cfi);
	}
	CHECK(!cfi_maps_remove_process(cm, t.pid) || fresh);
	cfi_maps_get_stats(cm, &ms);
	CHECK(ms.prefixes == 0 && ms.rows_used == 0);
	if (!notable) {
		/* The tables stay, idle: our own libc (the workload's) is
		 * reused, not built again. */
		CHECKF(ms.tables_idle >= 2 && ms.rows_idle > 0, "%s: %llu idle tables", name,
		       (unsigned long long)ms.tables_idle);
		CHECK(!cfi_maps_add_process(cm, getpid()));
		cfi_maps_get_stats(cm, &ms);
		CHECKF(ms.tables_reused >= 1, "%s: %llu tables reused", name,
		       (unsigned long long)ms.tables_reused);
		CHECK(!cfi_maps_remove_process(cm, getpid()));
	}
out:
	bpf_link__destroy(link);
	if (ufd >= 0)
		close(ufd);
	if (stats_fd >= 0)
		close(stats_fd);
	if (pfd >= 0)
		close(pfd);
	ring_buffer__free(rb);
	unwinder_free(t.u);
	cfi_maps_free(cm);
	sample_bpf__destroy(skel);
	return 0;
}

/* The trie's answer at pc for pid: its table, or 0 with no entry. */
static uint32_t table_at(int mappings_fd, pid_t pid, uint64_t pc)
{
	struct cfi_mapping_key k = {
	    .prefixlen = 96, .tgid_be = htobe32((uint32_t)pid), .pc_be = htobe64(pc)};
	struct cfi_mapping v;

	return bpf_map_lookup_elem(mappings_fd, &k, &v) ? 0 : v.table;
}

/* The three maps cfi_maps loads, made here as the loader sizes them. */
struct cfi_fds {
	int rows, tables, map;
};

static struct cfi_maps *cfi_fds_open(struct cfi_fds *f)
{
	LIBBPF_OPTS(bpf_map_create_opts, lpm, .map_flags = BPF_F_NO_PREALLOC);
	struct cfi_maps *cm = NULL;

	f->rows =
	    bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, sizeof(struct cfi_row), 1 << 20, NULL);
	f->tables =
	    bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, sizeof(struct cfi_table_info), 256, NULL);
	f->map = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, NULL, sizeof(struct cfi_mapping_key),
				sizeof(struct cfi_mapping), 4096, &lpm);
	CHECK(f->rows >= 0 && f->tables >= 0 && f->map >= 0);
	if (f->rows >= 0 && f->tables >= 0 && f->map >= 0)
		CHECK(!cfi_maps_new(f->rows, f->tables, f->map, 1 << 20, 256, &cm));
	return cm;
}

static void cfi_fds_close(struct cfi_fds *f, struct cfi_maps *cm, const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			kill(pids[i], SIGCONT);
			waitpid(pids[i], NULL, 0);
		}
	}
	if (cm)
		cfi_maps_free(cm);
	if (f->rows >= 0)
		close(f->rows);
	if (f->tables >= 0)
		close(f->tables);
	if (f->map >= 0)
		close(f->map);
}

/* What a loaded process's entries say of each kind of executable memory
 * (bpf/cfi.h): a file with CFI its table, anonymous memory (mixed's
 * JIT-like stub) no CFI, and a pc in no mapping the /32 marker. */
static void test_cfi_maps_kinds(void)
{
	struct cfi_fds fds;
	struct cfi_maps *cm = cfi_fds_open(&fds);
	char path[4200], *buf = NULL, *line, *save = NULL;
	char *argv[] = {path, "1", NULL};
	unsigned files = 0, anon = 0;
	int map_fd = fds.map;
	size_t len;
	pid_t pid = -1;
	int i;

	if (!cm)
		goto out;
	snprintf(path, sizeof(path), "%s/mixed", workload_dir);
	pid = spawn(argv);
	kill(pid, SIGCONT);
	/* The stub is mapped at its start, before its calibration. */
	for (i = 0; i < 500 && !maps_exec_has(pid, NULL); i++)
		usleep(2000);
	kill(pid, SIGSTOP);
	CHECK(!cfi_maps_add_process(cm, pid));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	CHECK(!read_path_all(path, 0, 1 << 20, &buf, &len));
	for (line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lo, hi, ino;
		char perms[8];
		int n = 0;
		uint32_t tb;

		if (sscanf(line, "%llx-%llx %7s %*x %*x:%*x %llu %n", &lo, &hi, perms, &ino, &n) <
			4 ||
		    perms[2] != 'x' || strstr(line, "[vsyscall]"))
			continue;
		tb = table_at(map_fd, pid, lo + (hi - lo) / 2);
		if (ino) {
			files++;
			CHECKF(tb && tb < CFI_TABLE_MARKER, "%s: table %#x", line, tb);
		} else if (!strstr(line, "[vdso]")) {
			anon++;
			CHECKF(tb == CFI_TABLE_NOMAP, "%s: table %#x", line, tb);
		}
	}
	CHECKF(files >= 3 && anon >= 1, "%u file mappings, %u anonymous", files, anon);
	CHECKF(table_at(map_fd, pid, 0x10000) == CFI_TABLE_MARKER, "no marker: %#x",
	       table_at(map_fd, pid, 0x10000));
out:
	free(buf);
	cfi_fds_close(&fds, cm, &pid, 1);
}

/* Whether the worker has loaded pid (its /32 marker is in) after waiting
 * up to ms for it to be (want) so. */
static bool loaded_within(int map_fd, pid_t pid, int ms, bool want)
{
	bool in = false;

	for (int i = 0; i <= ms / 10; i++) {
		in = table_at(map_fd, pid, 0x10000) == CFI_TABLE_MARKER;
		if (in == want)
			break;
		if (i < ms / 10)
			usleep(10000);
	}
	return in;
}

/* cfi_worker_hold(w, 1), as under -a: an add waits one kick more, and an
 * exit queued meanwhile drops it, so that the worker never reads the maps
 * of a process gone within a drain pass. Without the hold the first kick
 * loads the process. */
static void test_cfi_worker_hold(void)
{
	struct cfi_fds fds;
	struct cfi_maps *cm = cfi_fds_open(&fds);
	char path[4200];
	char *argv[] = {path, "1", NULL};
	struct cfi_worker *w = NULL;
	int map_fd = fds.map;
	pid_t pids[2] = {-1, -1}, a, b;

	if (!cm || cfi_worker_start(cm, &w))
		goto out;
	snprintf(path, sizeof(path), "%s/mixed", workload_dir);
	a = pids[0] = spawn(argv);
	b = pids[1] = spawn(argv);
	/* Without the hold: loaded at the first kick. */
	cfi_worker_queue(w, a, true);
	cfi_worker_kick(w);
	CHECK(loaded_within(map_fd, a, 5000, true));
	cfi_worker_hold(w, 1);
	/* Held: not at the first kick, at the second. */
	cfi_worker_queue(w, b, true);
	cfi_worker_kick(w);
	CHECKF(!loaded_within(map_fd, b, 300, true), "loaded at the first kick");
	cfi_worker_kick(w);
	CHECKF(loaded_within(map_fd, b, 5000, true), "not loaded at the second kick");
	/* A remove alone waits for a second since the last wakeup (an add's,
	 * a's again, just before), then a kick with nothing new wakes the
	 * worker for it. */
	cfi_worker_queue(w, a, true);
	cfi_worker_kick(w);
	cfi_worker_kick(w);
	usleep(400000); /* a loaded again (tables built: milliseconds), the worker asleep */
	cfi_worker_queue(w, b, false);
	cfi_worker_kick(w);
	CHECKF(loaded_within(map_fd, b, 300, false), "removed at once");
	usleep(1000000);
	cfi_worker_kick(w);
	CHECKF(!loaded_within(map_fd, b, 5000, false), "still loaded after its remove");
	/* Added again and exited within the hold: never read. */
	cfi_worker_queue(w, b, true);
	cfi_worker_kick(w);
	cfi_worker_queue(w, b, false);
	cfi_worker_kick(w);
	cfi_worker_kick(w);
	CHECKF(!loaded_within(map_fd, b, 500, true), "loaded after its exit was queued");
out:
	if (w)
		cfi_worker_stop(w);
	cfi_fds_close(&fds, cm, pids, 2);
}

static bool compat_ok = true, modern_ok = true;

/* Each case on each sampler the kernel loads. */
static void run_both(const char *name, char *const argv[], unsigned flags)
{
	if (modern_ok)
		run_case(name, argv, flags);
	if (compat_ok)
		run_case(name, argv, flags | CASE_COMPAT);
}

static void test_cfi_bpf_nofp(void)
{
	char path[4200];
	char *argv[] = {path, "1", NULL};

	snprintf(path, sizeof(path), "%s/nofp", workload_dir);
	run_both("nofp", argv, 0);
	run_both("nofp", argv, CASE_WINDOWS);
	run_both("nofp", argv, CASE_NOTABLE);
	run_both("nofp", argv, CASE_URET);
	run_both("nofp", argv, CASE_FRESH);
}

static void test_cfi_bpf_partial(void)
{
	char path[4200];
	char *argv[] = {path, "1", NULL};

	snprintf(path, sizeof(path), "%s/split", workload_dir);
	run_both("split", argv, CASE_PARTIAL);
}

static void test_cfi_bpf_gzip(void)
{
	char *argv[] = {"/usr/bin/gzip", "-9", "-c", "-f", gzip_input, NULL};

	if (access(argv[0], X_OK)) {
		printf("SKIP test_cfi_bpf_gzip: no /usr/bin/gzip\n");
		return;
	}
	run_both("gzip", argv, 0);
	run_both("gzip", argv, CASE_WINDOWS);
}

/* Compressible text that gzip -9 works on for about a second. */
static int make_gzip_input(void)
{
	int fd = mkstemp(gzip_input);
	unsigned s = 7, i, j;
	FILE *f;

	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f)
		return -1;
	for (i = 0; i < 60000; i++) {
		for (j = 0; j < 6; j++) {
			s = s * 1103515245u + 12345u;
			fprintf(f, "w%u ", (s >> 16) % 5000);
		}
		fputc('\n', f);
	}
	return fclose(f);
}

int main(void)
{
	char self[4096];
	ssize_t k;
	bool ci = getenv("CI") && !strcmp(getenv("CI"), "true");
	struct sample_bpf *probe;

	if (geteuid() != 0 || !(probe = sample_bpf__open())) {
		printf("%s test_cfi_bpf: needs root and BPF\n", ci ? "FAIL" : "SKIP");
		return 0;
	}
	sample_bpf__destroy(probe);
	/* bpf_loop and ring-buffer dynptrs (5.19) for on_sample: the same
	 * probe as user/features.c's, in short. */
	modern_ok = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT,
					    BPF_FUNC_ringbuf_reserve_dynptr, NULL) > 0;
	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[k > 0 ? k : 0] = 0;
	snprintf(workload_dir, sizeof(workload_dir), "%s/../workloads", dirname(self));
	if (!getenv("CFI_BPF_VERBOSE"))
		libbpf_set_print(NULL); /* the verifier log, when a load fails */
	if (make_gzip_input()) {
		printf("FAIL test_cfi_bpf: no gzip input\n");
		return 1;
	}
	RUN_TEST(test_cfi_maps_kinds);
	RUN_TEST(test_cfi_worker_hold);
	RUN_TEST(test_cfi_bpf_nofp);
	RUN_TEST(test_cfi_bpf_partial);
	RUN_TEST(test_cfi_bpf_gzip);
	unlink(gzip_input);
	return check_tests_failed ? 1 : 0;
}
