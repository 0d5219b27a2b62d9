/* The BPF CFI walker's maps, filled from binaries' unwind tables: see
 * cfi_maps.h. */
#include "user/cfi_maps.h"
#include "formats/procmaps.h"

#include <bpf/bpf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "bpf/cfi.h"
#include "user/cfi_table.h"
#include "user/util.h"

/* A PT_LOAD segment: file offsets [off_lo, off_hi) hold vaddrs off + delta. */
struct seg {
	uint64_t off_lo, off_hi, delta;
};

struct table {
	uint64_t dev, ino;
	uint32_t first_row, nrows; /* the slice of cfi_rows; nrows 0: no table */
	uint64_t base;
	/* Tables of more than CFI_TABLE_MAX_ROWS rows are split: slice k has
	 * id ids[k] and covers vaddrs [lo[k], lo[k + 1]) (the last, to the
	 * end of the address space). */
	uint32_t nslices;
	uint32_t *ids;
	uint64_t *lo;
	struct seg *segs;
	size_t nsegs;
	unsigned refs;
	int load_err; /* why nrows is 0: -ENOSPC (out of budget), -ENOENT (no CFI), ... */
	bool live;
	/* refs 0, its rows kept: a binary mapped by one short-lived process
	 * after another (a compiler, a test's tools) is built once, not per
	 * process (a big library's table takes a second, and while the worker
	 * builds, every new process's samples are DWARF copies). Freed, oldest
	 * first, when a new table needs the space. */
	bool idle;
	uint64_t idle_seq;
	/* The file as built: an idle table is reused only for the same (the
	 * inode may have been freed and reused). */
	uint64_t size, mtime_ns, ctime_ns;
};

struct range {
	uint32_t start, len;
};

struct proc {
	pid_t pid;
	VEC(struct cfi_mapping_key) keys;
	VEC(size_t) tables; /* indices in m->tables, one per reference */
};

struct cfi_maps {
	int rows_fd, tables_fd, mappings_fd, files_fd, gen_fd, woken_fd;
	bool rows_nomap; /* cfi_rows cannot be mmapped: written by map updates */
	uint64_t gen;
	uint32_t rows_cap, ids_cap;
	uint8_t *id_used;	/* [ids_cap]: ids of cfi_tables in use (0 never is) */
	VEC(struct range) free; /* free slices of cfi_rows, sorted, merged */
	VEC(struct table) tables;
	VEC(struct proc) procs;
	uint64_t idle_clock;
	struct cfi_maps_stats st;
};

uint32_t cfi_maps_rows_for_budget(size_t budget_bytes)
{
	size_t n = budget_bytes / sizeof(struct cfi_row);

	if (n > UINT32_MAX / 2)
		n = UINT32_MAX / 2;
	return n ? (uint32_t)n : 1;
}

int cfi_maps_new(int rows_fd, int tables_fd, int mappings_fd, uint32_t rows, uint32_t tables,
		 struct cfi_maps **out)
{
	struct cfi_maps *m = calloc(1, sizeof(*m));
	struct range all = {0, rows};

	if (!m)
		return -ENOMEM;
	m->rows_fd = rows_fd;
	m->tables_fd = tables_fd;
	m->mappings_fd = mappings_fd;
	m->files_fd = -1;
	m->gen_fd = -1;
	m->woken_fd = -1;
	m->rows_cap = rows;
	m->ids_cap = tables;
	m->id_used = calloc(tables ? tables : 1, 1);
	m->st.rows_cap = rows;
	if (!m->id_used || VEC_PUSH(m->free, all)) {
		free(m->id_used);
		free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

void cfi_maps_set_files(struct cfi_maps *m, int files_fd)
{
	m->files_fd = files_fd;
}

void cfi_maps_set_gen(struct cfi_maps *m, int gen_fd)
{
	m->gen_fd = gen_fd;
}

void cfi_maps_set_woken(struct cfi_maps *m, int woken_fd)
{
	m->woken_fd = woken_fd;
}

/* After a change to the maps: the walk's per-CPU caches of rows and
 * mappings (bpf/cfi.h's cfi_gen) hold what it found before, and are
 * dropped when this changes. */
static void gen_bump(struct cfi_maps *m)
{
	uint32_t k = CFI_GEN_USER;

	m->gen++;
	if (m->gen_fd >= 0)
		bpf_map_update_elem(m->gen_fd, &k, &m->gen, 0);
}

/* The cfi_files key of a table: the kernel's dev_t (MINORBITS 20), as the
 * walk reads it from the vma's inode; t->dev is /proc/PID/maps' device,
 * which is that same superblock's (not the map_files fd's fstat, which on
 * overlayfs is the overlay's). */
static struct cfi_file_key file_key(const struct table *t)
{
	return (struct cfi_file_key){
	    .dev = (uint32_t)(major(t->dev) << 20 | (minor(t->dev) & 0xfffff)),
	    .ino = t->ino,
	};
}

/* The table's cfi_files entry, once its rows and slices are in. A file of
 * more segments or slices than an entry holds has none: its processes are
 * walked once added, as before. */
static void file_publish(struct cfi_maps *m, const struct table *t)
{
	struct cfi_file_key k = file_key(t);
	struct cfi_file f = {
	    .size = t->size,
	    .mtime_sec = (int64_t)(t->mtime_ns / 1000000000u),
	    .mtime_nsec = (uint32_t)(t->mtime_ns % 1000000000u),
	    .nsegs = (uint32_t)t->nsegs,
	    .nslices = t->nslices,
	};
	uint32_t i;

	if (m->files_fd < 0 || t->nsegs > CFI_FILE_SEGS || t->nslices > CFI_FILE_SLICES)
		return;
	for (i = 0; i < t->nsegs; i++) {
		f.seg[i].off_lo = t->segs[i].off_lo;
		f.seg[i].off_hi = t->segs[i].off_hi;
		f.seg[i].delta = t->segs[i].delta;
	}
	for (i = 0; i < t->nslices; i++) {
		f.slice_lo[i] = t->lo[i];
		f.slice_id[i] = t->ids[i];
	}
	if (bpf_map_update_elem(m->files_fd, &k, &f, 0))
		debug("cfi: inode %" PRIu64 ": no file entry: %s", t->ino, strerror(errno));
}

/* First fit. */
static int slice_alloc(struct cfi_maps *m, uint32_t n, uint32_t *start)
{
	size_t i;

	for (i = 0; i < m->free.n; i++) {
		struct range *r = &m->free.v[i];

		if (r->len < n)
			continue;
		*start = r->start;
		r->start += n;
		r->len -= n;
		if (!r->len) {
			memmove(r, r + 1, (m->free.n - i - 1) * sizeof(*r));
			m->free.n--;
		}
		return 0;
	}
	return -ENOSPC;
}

static void slice_free(struct cfi_maps *m, uint32_t start, uint32_t n)
{
	struct range r = {start, n};
	size_t i;

	for (i = 0; i < m->free.n && m->free.v[i].start < start; i++)
		;
	if (VEC_RESERVE(m->free, m->free.n + 1)) {
		warn("cfi: out of memory: %u rows leak", n); /* only the slice is lost */
		return;
	}
	memmove(&m->free.v[i + 1], &m->free.v[i], (m->free.n - i) * sizeof(r));
	m->free.v[i] = r;
	m->free.n++;
	/* Merge with the next, then with the previous. */
	if (i + 1 < m->free.n && m->free.v[i].start + m->free.v[i].len == m->free.v[i + 1].start) {
		m->free.v[i].len += m->free.v[i + 1].len;
		memmove(&m->free.v[i + 1], &m->free.v[i + 2], (m->free.n - i - 2) * sizeof(r));
		m->free.n--;
	}
	if (i > 0 && m->free.v[i - 1].start + m->free.v[i - 1].len == m->free.v[i].start) {
		m->free.v[i - 1].len += m->free.v[i].len;
		memmove(&m->free.v[i], &m->free.v[i + 1], (m->free.n - i - 1) * sizeof(r));
		m->free.n--;
	}
}

/* The rows through a shared mapping of the pages of cfi_rows they go to
 * (BPF_F_MMAPABLE, bpf/cfi_walk.bpf.h): a memcpy, where the batched update
 * copied and checked each 8-byte row in the kernel (0.2 s of a 10 s
 * `-a --off-cpu` recording under pgbench, perf). Unmapped at once: the
 * rows are the kernel's memory, never counted in our RSS for longer than
 * the copy. -ENODEV when the map cannot be mapped (made without the flag):
 * the caller updates it. */
static int map_rows(struct cfi_maps *m, uint32_t first, const struct cfi_row *rows, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t lo = (size_t)first * sizeof(*rows), hi = lo + n * sizeof(*rows);
	size_t off = lo / page * page, len = (hi - off + page - 1) / page * page;
	void *at;

	if (m->rows_nomap)
		return -ENODEV;
	at = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->rows_fd, (off_t)off);
	if (at == MAP_FAILED) {
		m->rows_nomap = true;
		return -ENODEV;
	}
	memcpy((char *)at + (lo - off), rows, n * sizeof(*rows));
	munmap(at, len);
	return 0;
}

static int write_rows(struct cfi_maps *m, uint32_t first, const struct cfi_row *rows, size_t n)
{
	size_t done = 0;

	if (!map_rows(m, first, rows, n))
		return 0;
	/* Batched (5.6+) where it works, one by one where it does not. */
	while (done < n) {
		uint32_t count = n - done > 65536 ? 65536 : (uint32_t)(n - done), i;
		uint32_t *keys = malloc(count * sizeof(*keys));
		int err;

		if (!keys)
			return -ENOMEM;
		for (i = 0; i < count; i++)
			keys[i] = first + done + i;
		err = bpf_map_update_batch(m->rows_fd, keys, rows + done, &count, NULL);
		if (err) {
			count = n - done > 65536 ? 65536 : (uint32_t)(n - done);
			for (i = 0; i < count; i++) {
				err = bpf_map_update_elem(m->rows_fd, &keys[i], &rows[done + i], 0);
				if (err) {
					free(keys);
					return err;
				}
			}
		}
		free(keys);
		done += count;
	}
	return 0;
}

static int read_segs(Elf *elf, struct table *t)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	t->segs = calloc(n ? n : 1, sizeof(*t->segs));
	if (!t->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* A mapping's offset is the segment's, rounded down to a page. */
		t->segs[t->nsegs].off_lo = ph.p_offset & ~(uint64_t)0xfff;
		t->segs[t->nsegs].off_hi = ph.p_offset + ph.p_filesz;
		t->segs[t->nsegs].delta = ph.p_vaddr - ph.p_offset;
		t->nsegs++;
	}
	return 0;
}

static uint32_t id_alloc(struct cfi_maps *m)
{
	uint32_t id;

	for (id = 1; id < m->ids_cap; id++)
		if (!m->id_used[id]) {
			m->id_used[id] = 1;
			return id;
		}
	return 0;
}

/* Zeroes its cfi_tables entry (an array's entries cannot be deleted). */
static void id_free(struct cfi_maps *m, uint32_t id)
{
	struct cfi_table_info none = {0};

	if (!id || id >= m->ids_cap)
		return;
	bpf_map_update_elem(m->tables_fd, &id, &none, 0);
	m->id_used[id] = 0;
	gen_bump(m); /* before the id can go to another table */
}

static void table_unload(struct cfi_maps *m, struct table *t)
{
	struct cfi_file_key key = file_key(t);
	uint32_t k;

	/* First: a walk must not find the file's ids once they are free. */
	if (m->files_fd >= 0 && t->nrows)
		bpf_map_delete_elem(m->files_fd, &key);
	for (k = 0; k < t->nslices; k++)
		id_free(m, t->ids[k]);
	if (t->nrows) {
		slice_free(m, t->first_row, t->nrows);
		if (t->idle) {
			m->st.rows_idle -= t->nrows;
			m->st.tables_idle--;
		} else {
			m->st.rows_used -= t->nrows;
			m->st.tables--;
		}
	}
	free(t->ids);
	free(t->lo);
	free(t->segs);
	memset(t, 0, sizeof(*t));
}

/* Frees the idle table left longest ago; false when there is none. */
static bool evict_idle(struct cfi_maps *m)
{
	struct table *old = NULL;
	size_t i;

	for (i = 0; i < m->tables.n; i++) {
		struct table *t = &m->tables.v[i];

		if (t->live && t->idle && (!old || t->idle_seq < old->idle_seq))
			old = t;
	}
	if (!old)
		return false;
	table_unload(m, old);
	return true;
}

/* The last process of a table left: its rows stay, for the next process
 * of the binary. One without rows (no CFI, out of budget) is dropped: the
 * next may find room. */
static void table_release(struct cfi_maps *m, struct table *t)
{
	if (!t->nrows) {
		table_unload(m, t);
		return;
	}
	t->idle = true;
	t->idle_seq = ++m->idle_clock;
	m->st.rows_used -= t->nrows;
	m->st.tables--;
	m->st.rows_idle += t->nrows;
	m->st.tables_idle++;
}

static void table_reuse(struct cfi_maps *m, struct table *t)
{
	t->idle = false;
	m->st.rows_idle -= t->nrows;
	m->st.tables_idle--;
	m->st.rows_used += t->nrows;
	m->st.tables++;
	m->st.tables_reused++;
}

static void file_id(int fd, uint64_t *size, uint64_t *mtime_ns, uint64_t *ctime_ns)
{
	struct stat st;

	*size = *mtime_ns = *ctime_ns = 0;
	if (fd < 0 || fstat(fd, &st))
		return; /* the vdso: the kernel's image, the same for the whole run */
	*size = st.st_size;
	*mtime_ns = st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
	*ctime_ns = st.st_ctim.tv_sec * 1000000000ull + st.st_ctim.tv_nsec;
}

/* Rows of slice r0 of a table (up to CFI_TABLE_MAX_ROWS) and the pages
 * (bpf/cfi.h's index) their pc_offs span, the first in *page0. */
static uint32_t slice_pages(const struct cfi_table *ct, uint32_t r0, uint32_t *page0)
{
	uint32_t n = ct->nrows - r0 > CFI_TABLE_MAX_ROWS ? CFI_TABLE_MAX_ROWS : ct->nrows - r0;

	*page0 = ct->rows[r0].pc_off >> CFI_PAGE_SHIFT;
	return (ct->rows[r0 + n - 1].pc_off >> CFI_PAGE_SHIFT) - *page0 + 1;
}

/* Writes slice r0's page index to out (slice_pages entries): the slice's
 * row of each page's first byte. Returns the entries. */
static uint32_t slice_index(const struct cfi_table *ct, uint32_t r0, struct cfi_row *out)
{
	uint32_t page0, np = slice_pages(ct, r0, &page0), p, i = 0;
	uint32_t n = ct->nrows - r0 > CFI_TABLE_MAX_ROWS ? CFI_TABLE_MAX_ROWS : ct->nrows - r0;

	for (p = 0; p < np; p++) {
		uint64_t start = (uint64_t)(page0 + p) << CFI_PAGE_SHIFT;

		while (i + 1 < n && ct->rows[r0 + i + 1].pc_off <= start)
			i++;
		out[p] = (struct cfi_row){.pc_off = i};
	}
	return np;
}

/* Builds and loads the table of a binary. nrows stays 0 when it has no
 * CFI or does not fit: segs is still read, for the bias. */
static int table_load(struct cfi_maps *m, struct table *t, Elf *elf)
{
	struct cfi_table ct = {0};
	struct cfi_row *all;
	uint32_t k, first, total, page0, ni, np;
	int err;

	err = read_segs(elf, t);
	if (!err)
		err = cfi_table_build(elf, &ct);
	if (err)
		return err;
	if (!ct.nrows) {
		cfi_table_free(&ct);
		return -ENOSPC;
	}
	/* The rows, then each slice's page index. */
	for (k = 0, total = ct.nrows; k * CFI_TABLE_MAX_ROWS < ct.nrows; k++)
		total += slice_pages(&ct, k * CFI_TABLE_MAX_ROWS, &page0);
	all = total > m->rows_cap ? NULL : malloc((size_t)total * sizeof(*all));
	if (!all) {
		cfi_table_free(&ct);
		return total > m->rows_cap ? -ENOSPC : -ENOMEM;
	}
	memcpy(all, ct.rows, (size_t)ct.nrows * sizeof(*all));
	for (k = 0, ni = ct.nrows; k * CFI_TABLE_MAX_ROWS < ct.nrows; k++)
		ni += slice_index(&ct, k * CFI_TABLE_MAX_ROWS, all + ni);
	while (slice_alloc(m, total, &first))
		if (!evict_idle(m)) {
			free(all);
			cfi_table_free(&ct);
			return -ENOSPC;
		}
	t->nslices = (ct.nrows + CFI_TABLE_MAX_ROWS - 1) / CFI_TABLE_MAX_ROWS;
	t->ids = calloc(t->nslices, sizeof(*t->ids));
	t->lo = calloc(t->nslices, sizeof(*t->lo));
	if (!t->ids || !t->lo) {
		err = -ENOMEM;
		goto fail;
	}
	err = write_rows(m, first, all, total);
	if (err)
		goto fail;
	for (k = 0, ni = ct.nrows; k < t->nslices; k++, ni += np) {
		uint32_t r0 = k * CFI_TABLE_MAX_ROWS;

		np = slice_pages(&ct, r0, &page0);
		struct cfi_table_info info = {
		    .first_row = first + r0,
		    .nrows =
			ct.nrows - r0 > CFI_TABLE_MAX_ROWS ? CFI_TABLE_MAX_ROWS : ct.nrows - r0,
		    .base = ct.base,
		    .idx_first = first + ni,
		    .idx_n = np,
		    .idx_page0 = page0,
		};

		while (!(t->ids[k] = id_alloc(m)) && evict_idle(m))
			;
		if (!t->ids[k]) {
			err = -ENOSPC; /* out of table ids: as out of budget */
			goto fail;
		}
		t->lo[k] = k ? ct.base + ct.rows[r0].pc_off : 0;
		/* A slice is searched alone: its first row must start at
		 * its own range, the rows before it are not there. */
		err = bpf_map_update_elem(m->tables_fd, &t->ids[k], &info, 0);
		if (err)
			goto fail;
	}
	t->first_row = first;
	t->nrows = total;
	t->base = ct.base;
	free(all);
	file_publish(m, t);
	m->st.rows_used += total;
	m->st.tables++;
	m->st.tables_built++;
	if (m->st.rows_used > m->st.rows_peak)
		m->st.rows_peak = m->st.rows_used;
	cfi_table_free(&ct);
	return 0;
fail:
	for (k = 0; t->ids && k < t->nslices; k++)
		id_free(m, t->ids[k]);
	slice_free(m, first, total);
	free(all);
	free(t->ids);
	free(t->lo);
	t->ids = NULL;
	t->lo = NULL;
	t->nslices = 0;
	cfi_table_free(&ct);
	return err;
}

static struct proc *find_proc(struct cfi_maps *m, pid_t pid, bool create)
{
	struct proc p = {.pid = pid};
	size_t i;

	for (i = 0; i < m->procs.n; i++)
		if (m->procs.v[i].pid == pid)
			return &m->procs.v[i];
	if (!create || VEC_PUSH(m->procs, p))
		return NULL;
	m->st.processes++;
	return &m->procs.v[m->procs.n - 1];
}

/* [start, end) of tgid as the LPM prefixes that cover it exactly. */
static int add_range(struct cfi_maps *m, struct proc *p, uint64_t start, uint64_t end,
		     const struct cfi_mapping *val)
{
	while (start < end) {
		int bits = start ? __builtin_ctzll(start) : 64;
		struct cfi_mapping_key k;
		int err;

		while (bits > 0 && (bits >= 64 || end - start < (1ULL << bits)))
			bits--;
		k.prefixlen = 32 + 64 - bits;
		k.tgid_be = htobe32((uint32_t)p->pid);
		k.pc_be = htobe64(start);
		err = bpf_map_update_elem(m->mappings_fd, &k, val, 0);
		if (err)
			return err;
		if (VEC_PUSH(p->keys, k)) {
			bpf_map_delete_elem(m->mappings_fd, &k);
			return -ENOMEM;
		}
		m->st.prefixes++;
		start += 1ULL << bits;
		if (!start)
			break; /* the top of the address space */
	}
	return 0;
}

/* The process's /32 entry (bpf/cfi.h's CFI_TABLE_MARKER): loaded; a pc no
 * mapping covers was mapped since. */
static int add_marker(struct cfi_maps *m, pid_t pid)
{
	struct cfi_mapping_key k = {.prefixlen = 32, .tgid_be = htobe32((uint32_t)pid)};
	struct cfi_mapping val = {.table = CFI_TABLE_MARKER};
	struct proc *p = find_proc(m, pid, true);
	int err;

	if (!p)
		return -ENOMEM;
	if (bpf_map_update_elem(m->mappings_fd, &k, &val, 0))
		return -errno;
	if ((err = VEC_PUSH(p->keys, k))) {
		bpf_map_delete_elem(m->mappings_fd, &k);
		return err;
	}
	m->st.prefixes++;
	return 0;
}

/* Executable memory without CFI (JIT code, a file that is no ELF or has no
 * CFI): frame pointers there (bpf/cfi.h's CFI_TABLE_NOMAP). */
static int add_nomap(struct cfi_maps *m, pid_t pid, uint64_t start, uint64_t end)
{
	struct cfi_mapping val = {.table = CFI_TABLE_NOMAP, .start = start, .end = end};
	struct proc *p = find_proc(m, pid, true);

	return p ? add_range(m, p, start, end, &val) : -ENOMEM;
}

/* The live table of a file, or m->tables.n. */
static size_t live_table(const struct cfi_maps *m, uint64_t dev, uint64_t ino)
{
	size_t ti;

	for (ti = 0; ti < m->tables.n; ti++)
		if (m->tables.v[ti].live && m->tables.v[ti].dev == dev &&
		    m->tables.v[ti].ino == ino)
			break;
	return ti;
}

/* big: see cfi_maps_add_process_quick (0: build whatever the size). */
static int add_mapping(struct cfi_maps *m, pid_t pid, uint64_t start, uint64_t end, uint64_t offset,
		       uint64_t dev, uint64_t ino, int fd, Elf *mem, uint64_t big)
{
	struct table *t = NULL, fresh = {.dev = dev, .ino = ino};
	struct proc *p;
	uint64_t bias = 0;
	size_t ti, i;
	uint32_t k;
	int err = 0;

	file_id(fd, &fresh.size, &fresh.mtime_ns, &fresh.ctime_ns);
	ti = live_table(m, dev, ino);
	/* An idle table of a file since replaced (its inode reused): rebuilt.
	 * A mapped file's inode cannot be reused: one in use is that file. */
	if (ti < m->tables.n && m->tables.v[ti].idle &&
	    (m->tables.v[ti].size != fresh.size || m->tables.v[ti].mtime_ns != fresh.mtime_ns ||
	     m->tables.v[ti].ctime_ns != fresh.ctime_ns)) {
		table_unload(m, &m->tables.v[ti]);
		ti = m->tables.n;
	}
	if (ti == m->tables.n && big && fresh.size > big) {
		struct cfi_mapping val = {.table = 0, .start = start, .end = end};

		p = find_proc(m, pid, true);
		if (!p)
			return -ENOMEM;
		err = add_range(m, p, start, end, &val);
		return err ? err : -EAGAIN;
	}
	if (ti == m->tables.n) {
		for (ti = 0; ti < m->tables.n && m->tables.v[ti].live; ti++)
			;
		if (ti == m->tables.n && VEC_PUSH(m->tables, fresh))
			return -ENOMEM;
		t = &m->tables.v[ti];
		*t = fresh;
		t->live = true;
		Elf *elf = mem ? mem : elf_begin(fd, ELF_C_READ_MMAP, NULL);

		err = t->load_err = elf ? table_load(m, t, elf) : -ENOEXEC;
		if (elf && !mem)
			elf_end(elf);
		if (err == -ENOSPC)
			warn("cfi: a binary (dev %" PRIx64 ", inode %" PRIu64 ") does not fit in "
			     "the unwind table budget: DWARF unwinding for it",
			     dev, ino);
		else if (err && err != -ENOENT)
			debug("cfi: no table for inode %" PRIu64 ": %s", ino, strerror(-err));
		if (err && !t->segs) {
			t->live = false;
			m->st.build_failed++;
			return err;
		}
	}
	t = &m->tables.v[ti];
	p = find_proc(m, pid, true);
	if (!p)
		return -ENOMEM;
	for (i = 0; i < t->nsegs; i++)
		if (offset >= t->segs[i].off_lo && offset < t->segs[i].off_hi)
			break;
	if (i == t->nsegs) {
		m->st.build_failed++;
		return -ENOEXEC; /* no segment maps that offset */
	}
	bias = start - (offset + t->segs[i].delta);
	if (VEC_PUSH(p->tables, ti))
		return -ENOMEM;
	if (t->idle)
		table_reuse(m, t);
	t->refs++;

	if (!t->nrows) {
		/* Out of budget: table 0, the walk hands the sample to DWARF.
		 * Without CFI: frame pointers there. */
		struct cfi_mapping val = {.bias = bias, .table = 0, .start = start, .end = end};

		if (t->load_err != -ENOSPC) {
			m->st.no_cfi++;
			return add_nomap(m, pid, start, end);
		}
		m->st.out_of_budget++;
		err = add_range(m, p, start, end, &val);
		return err ? err : -ENOSPC;
	}
	for (k = 0; k < t->nslices; k++) {
		struct cfi_mapping val = {.bias = bias, .table = t->ids[k]};
		uint64_t lo = t->lo[k] + bias, hi = k + 1 < t->nslices ? t->lo[k + 1] + bias : end;

		if (!k)
			lo = start;
		if (lo < start)
			lo = start;
		if (hi > end)
			hi = end;
		val.start = lo;
		val.end = hi;
		if (lo < hi) {
			err = add_range(m, p, lo, hi, &val);
			if (err)
				return err;
		}
	}
	return 0;
}

/* The vdso: the kernel's, the same image in every 64-bit process, so ours
 * is read (from memory: it has no file) and keyed (0, 0). Its code (the
 * clock_gettime a program calls in a loop) has CFI but, built without
 * frame pointers, no frame-pointer fallback. */
static int add_vdso(struct cfi_maps *m, pid_t pid, uint64_t start, uint64_t end)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	size_t size;
	Elf *elf;
	int err;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOENT;
	/* The image ends with its section headers. */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > end - start)
		return -ENOEXEC;
	elf = elf_memory((char *)eh, size);
	if (!elf)
		return -ENOEXEC;
	err = add_mapping(m, pid, start, end, 0, 0, 0, -1, elf, 0);
	elf_end(elf);
	return err;
}

static void drop_proc(struct cfi_maps *m, struct proc *p)
{
	size_t i;

	for (i = 0; i < p->keys.n; i++)
		bpf_map_delete_elem(m->mappings_fd, &p->keys.v[i]);
	m->st.prefixes -= p->keys.n;
	for (i = 0; i < p->tables.n; i++) {
		struct table *t = &m->tables.v[p->tables.v[i]];

		if (--t->refs == 0)
			table_release(m, t);
	}
	VEC_FREE(p->keys);
	VEC_FREE(p->tables);
}

int cfi_maps_remove_process(struct cfi_maps *m, pid_t pid)
{
	struct proc *p = find_proc(m, pid, false);

	if (!p)
		return -ENOENT;
	drop_proc(m, p);
	*p = m->procs.v[--m->procs.n];
	m->st.processes--;
	gen_bump(m);
	return 0;
}

/* The entries a process had before cfi_maps_add_process re-read its maps:
 * those not added again are deleted, and its old references to tables
 * dropped only now, so that a table still mapped is not rebuilt. */
static void release_old(struct cfi_maps *m, pid_t pid, struct proc *old)
{
	struct proc *p = find_proc(m, pid, false);
	size_t i, j;

	for (i = 0; i < old->keys.n; i++) {
		bool again = false;

		for (j = 0; p && j < p->keys.n && !again; j++)
			again = !memcmp(&p->keys.v[j], &old->keys.v[i], sizeof(old->keys.v[i]));
		if (!again)
			bpf_map_delete_elem(m->mappings_fd, &old->keys.v[i]);
	}
	m->st.prefixes -= old->keys.n;
	old->keys.n = 0;
	drop_proc(m, old);
}

/* Test hooks, by the files' base names. BPFTRACE_REC_NO_TABLES=NAME[,...]
 * leaves their mappings out, as if mapped after the process's maps were
 * read (the walk meets no table there, for good);
 * BPFTRACE_REC_SLOW_TABLES=NAME@SECONDS[,...] makes the first build of
 * their tables take SECONDS longer, as builds do under emulation (the
 * walks meet no table there until then). */
static bool table_held_back(const char *file)
{
	const char *base = strrchr(file, '/');

	return list_has(getenv("BPFTRACE_REC_NO_TABLES"), base ? base + 1 : file);
}

static double table_slowness(const char *file)
{
	const char *base = strrchr(file, '/');
	const char *v = list_value(getenv("BPFTRACE_REC_SLOW_TABLES"), base ? base + 1 : file);

	return v ? atof(v) : 0;
}

/* A file's executable mapping in pid (file: the path /proc/PID/maps gives):
 * its table, else (no file to open, no ELF, no CFI, no segment at that
 * offset) frame pointers there. */
static int add_file(struct cfi_maps *m, pid_t pid, const char *file, uint64_t start, uint64_t end,
		    uint64_t off, dev_t dev, uint64_t ino, uint64_t big)
{
	char path[64];
	struct stat st;
	double slow;
	int fd, err;

	if (table_held_back(file))
		return 0;
	if ((slow = table_slowness(file)) > 0 && live_table(m, dev, ino) == m->tables.n) {
		struct timespec ts = {(time_t)slow, (long)((slow - (time_t)slow) * 1e9)};

		nanosleep(&ts, NULL);
	}
	/* map_files: the mapped file itself, even deleted or in another mount
	 * namespace (CAP_SYS_ADMIN); else the path as the process sees it,
	 * through its root (containers). */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid,
		 (unsigned long long)start, (unsigned long long)end);
	fd = open_regular(path, 0);
	if (fd < 0) {
		char rooted[4200];

		snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", (int)pid, file);
		fd = open_regular(rooted, 0);
		/* By path: the same file as mapped, not one put in its place
		 * since. (Not for map_files, which is the mapped file itself: on
		 * overlayfs its fstat gives the overlay's device while maps gives
		 * the layer's.) */
		if (fd >= 0 && (fstat(fd, &st) || st.st_ino != ino || st.st_dev != dev)) {
			close(fd);
			fd = -ESTALE;
		}
	}
	if (fd < 0) {
		m->st.open_failed++;
		debug("cfi: pid %d: cannot open %s: %s", (int)pid, file, strerror(-fd));
		return add_nomap(m, pid, start, end);
	}
	err = add_mapping(m, pid, start, end, off, dev, ino, fd, NULL, big);
	close(fd);
	if (err == -ENOENT || err == -ENOEXEC || err == -EIO)
		err = add_nomap(m, pid, start, end);
	return err;
}

/* Anonymous memory (no file, no [name]): JIT code, when executable. */
static bool anon(const struct procmaps_entry *x)
{
	return !x->inode && !x->path[0];
}

static bool anon_exec(const struct procmaps_entry *x)
{
	return anon(x) && x->exec;
}

static int add_process(struct cfi_maps *m, pid_t pid, uint64_t big)
{
	struct procmaps_entry *e = NULL;
	char path[64], *buf = NULL;
	struct proc old = {.pid = pid}, *p;
	size_t len, n = 0, i;
	int err;
	bool deferred = false;

	p = find_proc(m, pid, false);
	if (p) {
		old = *p;
		memset(&p->keys, 0, sizeof(p->keys));
		memset(&p->tables, 0, sizeof(p->tables));
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	err = read_path_all(path, 0, 64 << 20, &buf, &len);
	if (!err)
		err = procmaps_parse(buf, len, &e, &n);
	free(buf);
	if (err) {
		release_old(m, pid, &old);
		return err;
	}
	for (i = 0; i < n; i++) {
		const struct procmaps_entry *x = &e[i];

		if (!x->exec) {
			/* The rest of a JIT's reservation, where its next code
			 * pages will be (V8 commits its code range 256 KiB at a
			 * time, HotSpot its code cache): frame pointers there
			 * as in its code, from the first walk on. Without it a
			 * walk through a page committed since the maps were
			 * read met no table, and its deep stack went to DWARF
			 * (a tsc compile: 834 of 7856 samples cut short). */
			if (anon(x) &&
			    ((i && anon_exec(&e[i - 1]) && e[i - 1].end == x->start) ||
			     (i + 1 < n && anon_exec(&e[i + 1]) && e[i + 1].start == x->end))) {
				err = add_nomap(m, pid, x->start, x->end);
				if (err && err != -ENOSPC)
					goto fail;
			}
			continue;
		}
		if (!strcmp(x->path, "[vdso]")) {
			add_vdso(m, pid, x->start, x->end); /* the caller bumps cfi_gen once */
			continue;
		}
		/* Anonymous (JIT code), [uprobes], [vsyscall]: no CFI. A
		 * deleted file is opened through map_files (add_file). */
		if (!x->inode || x->path[0] != '/')
			err = add_nomap(m, pid, x->start, x->end);
		else
			err = add_file(m, pid, x->path, x->start, x->end, x->offset,
				       makedev(x->dev_major, x->dev_minor), x->inode, big);
		deferred |= err == -EAGAIN;
		if (err && err != -EAGAIN && err != -ENOSPC)
			goto fail;
	}
	procmaps_free(e, n);
	/* Loaded: a pc in no mapping is one mapped since this read (bpf/cfi.h),
	 * whose first walk wakes the drain, to read the maps again. */
	err = add_marker(m, pid);
	if (!err && m->woken_fd >= 0) {
		uint32_t tgid = (uint32_t)pid;

		bpf_map_delete_elem(m->woken_fd, &tgid);
	}
	release_old(m, pid, &old);
	return !err && deferred ? -EAGAIN : err;
fail:
	procmaps_free(e, n);
	release_old(m, pid, &old);
	return err;
}

int cfi_maps_add_process_quick(struct cfi_maps *m, pid_t pid, uint64_t big)
{
	int err = add_process(m, pid, big);

	gen_bump(m); /* its mappings may have changed (exec, dlopen, munmap) */
	return err;
}

int cfi_maps_add_process(struct cfi_maps *m, pid_t pid)
{
	return cfi_maps_add_process_quick(m, pid, 0);
}

void cfi_maps_get_stats(const struct cfi_maps *m, struct cfi_maps_stats *st)
{
	*st = m->st;
	st->bytes_used = st->rows_used * sizeof(struct cfi_row);
	st->bytes_peak = st->rows_peak * sizeof(struct cfi_row);
}

void cfi_maps_free(struct cfi_maps *m)
{
	size_t i;

	if (!m)
		return;
	while (m->procs.n)
		cfi_maps_remove_process(m, m->procs.v[0].pid);
	for (i = 0; i < m->tables.n; i++)
		if (m->tables.v[i].live)
			table_unload(m, &m->tables.v[i]);
	VEC_FREE(m->procs);
	VEC_FREE(m->tables);
	VEC_FREE(m->free);
	free(m->id_used);
	free(m);
}

/* The worker: adds and removes in order, off the caller's thread. A pid
 * added again while its add waits is added once. */
struct op {
	pid_t pid;
	bool add;
	bool build;    /* the big builds an add left (-EAGAIN): after the other ops */
	uint8_t waits; /* an add's kicks still to wait (cfi_worker_hold) */
};
struct ops {
	VEC_BODY(struct op)
};

/* Files bigger than this have their tables built after the queue's other
 * processes are added: python3.11 (6.6 MB) builds in 24-50 ms, node (90 MB)
 * in 171-369 ms, a compiler's cc1 took 845 ms under load. */
#define CFI_BIG_FILE (16u << 20)

struct cfi_worker {
	struct cfi_maps *m;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ops ops;
	/* The caller's ops since its last cfi_worker_kick, its thread's alone:
	 * handed over at once, with one wakeup. */
	struct ops pending;
	uint8_t hold;	   /* kicks an add waits in pending (cfi_worker_hold) */
	uint64_t woken_ns; /* the last wakeup (CLOCK_MONOTONIC) */
	bool unwoken;	   /* ops handed over since (the caller's thread's) */
	bool stop;
	uint64_t cpu_ns; /* the thread's CPU time, set as it ends */
};

static void *worker_main(void *arg)
{
	struct cfi_worker *w = arg;
	size_t i;

	/* Not niced: on a machine whose CPUs are all busy (what is profiled)
	 * a niced worker loaded no table in a 2 s run, and every sample went
	 * the DWARF way (8 KB records, 3x the BPF time). */
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct op op;

		while (!w->ops.n && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->stop)
			break;
		/* The first op that is no deferred build, else the first. */
		for (i = 0; i < w->ops.n && w->ops.v[i].build; i++)
			;
		if (i == w->ops.n)
			i = 0;
		op = w->ops.v[i];
		memmove(w->ops.v + i, w->ops.v + i + 1, (--w->ops.n - i) * sizeof(*w->ops.v));
		pthread_mutex_unlock(&w->lock);
		if (op.add) {
			int err = op.build ? cfi_maps_add_process(w->m, op.pid)
					   : cfi_maps_add_process_quick(w->m, op.pid, CFI_BIG_FILE);

			if (err == -EAGAIN) {
				op.build = true;
				pthread_mutex_lock(&w->lock);
				VEC_PUSH(w->ops, op); /* on ENOMEM: table 0, DWARF */
				pthread_mutex_unlock(&w->lock);
			} else if (err && err != -ENOENT && err != -ESRCH) {
				debug("pid %d: unwind tables: %s", (int)op.pid, strerror(-err));
			} else if (!err) {
				/* What a test waits on (-v) before it has the target
				 * run what it compares: its samples from here on are
				 * walked with tables, none by DWARF from a copy. */
				debug("pid %d: unwind tables ready", (int)op.pid);
			}
		} else {
			cfi_maps_remove_process(w->m, op.pid);
		}
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int cfi_worker_start(struct cfi_maps *m, struct cfi_worker **out)
{
	struct cfi_worker *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	int err;

	if (!w)
		return -ENOMEM;
	w->m = m;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	/* Signals are the drain's to take: the thread starts with all blocked. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&w->thread, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
		return -err;
	}
	*out = w;
	return 0;
}

void cfi_worker_hold(struct cfi_worker *w, unsigned kicks)
{
	w->hold = kicks < UINT8_MAX ? (uint8_t)kicks : UINT8_MAX;
}

/* op into v. A remove takes back v's adds of its process, a deferred
 * build too: under process churn most processes exit within the drain
 * pass that saw their exec, and loading their maps only to delete them
 * was half of the worker's map updates; the remove still goes (an earlier
 * add may have been handed over). An add that v has already (not as a
 * deferred build) is not put twice. On ENOMEM the process is only not
 * loaded (or not removed). */
static void ops_put(struct ops *v, struct op op)
{
	size_t i, kept = 0;

	if (!op.add) {
		for (i = 0; i < v->n; i++)
			if (!(v->v[i].pid == op.pid && v->v[i].add))
				v->v[kept++] = v->v[i];
		v->n = kept;
	} else {
		for (i = 0; i < v->n; i++)
			if (v->v[i].pid == op.pid && v->v[i].add && !v->v[i].build)
				return;
	}
	VEC_PUSH(*v, op);
}

void cfi_worker_queue(struct cfi_worker *w, pid_t pid, bool add)
{
	ops_put(&w->pending, (struct op){.pid = pid, .add = add, .waits = add ? w->hold : 0});
}

/* Removes only free rows and ids: they wait for an add's wakeup, up to
 * this long or this many. A wakeup of the worker cost 50-100 us of the
 * drain's CPU here (futex, an IPI to the other CPU's idle task), and under
 * churn most passes handed over only the removes of exited processes. */
#define CFI_REMOVE_WAIT_NS (1000000000ULL)
#define CFI_REMOVE_BATCH   256

void cfi_worker_kick(struct cfi_worker *w)
{
	size_t i, kept = 0;
	bool add = false;
	uint64_t now;

	if (!w || (!w->pending.n && !w->unwoken))
		return;
	now = now_ns(CLOCK_MONOTONIC);
	pthread_mutex_lock(&w->lock);
	for (i = 0; i < w->pending.n; i++) {
		struct op op = w->pending.v[i];

		if (op.add && op.waits) {
			op.waits--;
			w->pending.v[kept++] = op;
			continue;
		}
		ops_put(&w->ops, op);
		add |= op.add;
		w->unwoken = true;
	}
	w->pending.n = kept;
	if (w->unwoken &&
	    (add || w->ops.n >= CFI_REMOVE_BATCH || now - w->woken_ns >= CFI_REMOVE_WAIT_NS)) {
		pthread_cond_signal(&w->cond);
		w->woken_ns = now;
		w->unwoken = false;
	}
	pthread_mutex_unlock(&w->lock);
}

uint64_t cfi_worker_stop(struct cfi_worker *w)
{
	uint64_t cpu_ns;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	VEC_FREE(w->ops);
	VEC_FREE(w->pending);
	cpu_ns = w->cpu_ns;
	free(w);
	return cpu_ns;
}
