/* Loads the unwind tables of bpf/cfi.h into the BPF walker's maps
 * (bpf/cfi_walk.bpf.h): cfi_rows (the rows of every table, in slices),
 * cfi_tables (table id -> slice) and cfi_mappings (the executable file
 * mappings of each process -> table id and load bias). Pure user space:
 * map fds in. One table per binary, keyed by (device, inode) and shared by
 * every process that maps it; freed when the last such process is removed.
 * Not thread-safe. */
#ifndef USER_CFI_MAPS_H
#define USER_CFI_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CFI_MAPS_DEFAULT_BUDGET (64u << 20) /* bytes of rows (the future --unwind-mib) */

struct cfi_maps;

struct cfi_maps_stats {
	uint64_t tables;	/* binaries with a loaded table */
	uint64_t rows_used;	/* rows in cfi_rows taken by them */
	uint64_t rows_cap;	/* cfi_rows' entries */
	uint64_t bytes_used;	/* rows_used * sizeof(struct cfi_row) */
	uint64_t tables_built;	/* tables built over the run (a binary again after its
				 * idle table was evicted, or the file changed, counts again) */
	uint64_t rows_peak;	/* the most rows_used has been */
	uint64_t bytes_peak;	/* rows_peak * sizeof(struct cfi_row) */
	uint64_t processes;	/* processes added and not removed */
	uint64_t prefixes;	/* cfi_mappings entries */
	uint64_t out_of_budget; /* mappings given table 0: their binary did not fit */
	uint64_t no_cfi;	/* mappings of binaries without CFI (left out: frame pointers) */
	uint64_t open_failed;	/* mappings whose file could not be opened (or changed) */
	uint64_t build_failed;	/* mappings whose binary's table could not be built */
	uint64_t tables_idle;	/* tables kept loaded after their last process left */
	uint64_t rows_idle;	/* rows in cfi_rows taken by them (freed as space is needed) */
	uint64_t tables_reused; /* idle tables a new process mapped again (no build) */
};

/* Entries of cfi_rows for a budget of bytes, for bpf_map__set_max_entries
 * before the skeleton is loaded. */
uint32_t cfi_maps_rows_for_budget(size_t budget_bytes);

/* The maps' fds (kept by the caller, which must outlive the result); rows
 * and tables: cfi_rows' and cfi_tables' max_entries (table ids are 1 ..
 * tables - 1; a table of more than CFI_TABLE_MAX_ROWS rows takes one per
 * slice). 0 or -errno. */
int cfi_maps_new(int rows_fd, int tables_fd, int mappings_fd, uint32_t rows, uint32_t tables,
		 struct cfi_maps **out);
/* The cfi_files map (bpf/cfi.h), which then gets an entry per loaded
 * table: the walk finds a table by its file's (device, inode) from the
 * first sample of a process not added yet. Without it (fd -1, the
 * default), only added processes' mappings are found. */
void cfi_maps_set_files(struct cfi_maps *m, int files_fd);
/* The cfi_gen map (bpf/cfi.h): its user-space entry is changed after each
 * change to the others, so that the walk drops what it cached. Needed
 * whenever the walk runs (fd -1, the default: no walk reads the maps). */
void cfi_maps_set_gen(struct cfi_maps *m, int gen_fd);
/* The cfi_woken map (bpf/cfi_walk.bpf.h): a process's entry is deleted
 * each time it is added, so that the first walk that then meets no table
 * (a library mapped since) wakes the drain again. fd -1 (the default):
 * once per process. */
void cfi_maps_set_woken(struct cfi_maps *m, int woken_fd);
/* Removes every process's entries and every table, and frees. */
void cfi_maps_free(struct cfi_maps *m);

/* Adds the executable file mappings of a live process from
 * /proc/PID/maps, building the tables of binaries not seen yet. Adding a
 * process again (after exec, dlopen) replaces its entries. A binary that
 * does not fit in the budget gets table 0 (the walk then leaves the sample
 * to DWARF); one without CFI gets no entry (frame pointers there). 0, or
 * -errno when the process's maps could not be read or a map update
 * failed. */
int cfi_maps_add_process(struct cfi_maps *m, pid_t pid);
/* The same, except that binaries of more than `big` bytes whose table is
 * not built yet get table 0 for now (their samples go to DWARF, as before
 * the process was added): -EAGAIN when it left any, for a later
 * cfi_maps_add_process to build them. The worker does so, so that a big
 * build (a compiler's: close to a second here) does not hold up the
 * processes queued behind it. */
int cfi_maps_add_process_quick(struct cfi_maps *m, pid_t pid, uint64_t big);
/* Removes all the entries of a process (at its exit, or before an exec's
 * new maps are added). 0 or -ENOENT. */
int cfi_maps_remove_process(struct cfi_maps *m, pid_t pid);

void cfi_maps_get_stats(const struct cfi_maps *m, struct cfi_maps_stats *st);

/* A thread that does cfi_maps_add_process and _remove_process as they are
 * queued, in order: building a table takes milliseconds per binary (seconds
 * under emulation), and the caller's thread drains the ring buffer. While
 * the worker runs, m is its own: get the stats after cfi_worker_stop (which
 * drops what is still queued), which returns the CPU time the thread
 * took (table builds and map loads: per binary and per process, not per
 * sample). cfi_worker_start: 0 or -errno. */
struct cfi_worker;
int cfi_worker_start(struct cfi_maps *m, struct cfi_worker **out);
/* Queues an add (the process's maps were read) or a remove (it exited);
 * what is queued goes to the worker at the next cfi_worker_kick, with one
 * wakeup: the caller kicks once a pass over its events. Removes only wake
 * it once a second (or 256 of them): they free table space, nothing waits
 * for them. Both from the caller's one thread. */
void cfi_worker_queue(struct cfi_worker *w, pid_t pid, bool add);
void cfi_worker_kick(struct cfi_worker *w);
/* Adds queued from now on wait this many kicks before they go to the
 * worker (0, the default: the next), and are dropped if the process exits
 * meanwhile. Under -a: a churning host's processes mostly exit within
 * milliseconds, and each add read their maps and opened their files again,
 * for samples that the walk by file (cfi_files) takes anyway. */
void cfi_worker_hold(struct cfi_worker *w, unsigned kicks);
uint64_t cfi_worker_stop(struct cfi_worker *w);

#endif
