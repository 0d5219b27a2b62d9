/* -t usdt:BIN:PROBES: USDT probes as exact intervals in the XRay traces.
 * A probe named STEM__start (__entry, __begin) pairs with STEM__done
 * (__return, __end, __commit, __abort) of the same provider: each pair is
 * an XRay function, "provider:STEM", entered at the start and exited at the
 * done on the thread that fired them; Python's function__entry/return are
 * one function per Python function, "file:function" from their arguments.
 * Any other probe is an instant (an entry and exit at the same time).
 * The state is an object the recorder creates in rec_load and holds. */
#ifndef USER_USDT_H
#define USER_USDT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

struct usdt;
struct procs;
struct ev_hdr;

struct usdt_cfg {
	char *const *specs; /* "usdt:BIN:PROBE[,PROBE...]", PROBE a glob */
	int nspecs;
	unsigned trace_args; /* --trace-args: integer arguments recorded at a start */
	bool all;	     /* -a: every process's firings (but ours), not the target set's */
	bool ref_ctr;	     /* the kernel sets semaphores (features.h: uprobe_ref_ctr) */
	bool cookies;	     /* BPF cookies (features.h: attach_cookie) */
	int events_fd, targets_fd, stats_fd; /* the sampler's maps, shared */
	struct xray *xray;		     /* the registry of XRay function ids */
	uint64_t wakeup_bytes;
};

/* Opens and loads the BPF program (bpf/usdt.bpf.c). 0 or -1 after a message. */
int usdt_new(const struct usdt_cfg *c, struct usdt **out);
/* Resolves each spec's binary (a path; else for -p a file the targets map,
 * their executable first; for -- the command's; else from PATH), checks its
 * probes, and attaches them for every process of that binary. 0 or -1
 * after a one-line message. */
int usdt_attach(struct usdt *u, const pid_t *pids, int npids, const char *exe);
/* EV_USDT and EV_USDT_STR records; those after stop_ns (when set) are
 * dropped. 0 or -ENOMEM. */
int usdt_on_event(struct usdt *u, struct procs *procs, const struct ev_hdr *h, size_t size,
		  uint64_t stop_ns);
/* At the end, after the last records: warns of what was lost (st: the
 * BPF counters, STAT_NR of them) and of a pair whose done fired and whose
 * start never did. */
void usdt_report(const struct usdt *u, const uint64_t *st);
/* Detaches the probes (before the calls still open are closed). */
void usdt_detach(struct usdt *u);
/* For summary.json: probe i's names (raw, from the binary) and firings
 * drained; -ENOENT past the last (or u NULL). */
struct usdt_probe_stat {
	const char *provider, *name, *path;
	uint64_t fired;
};
int usdt_probe_stat(const struct usdt *u, size_t i, struct usdt_probe_stat *out);
/* String arguments not kept: more than the bound of distinct ones. */
uint64_t usdt_strs_dropped(const struct usdt *u);
/* Dones (returns) that found no start open on their thread: written as
 * instants. */
uint64_t usdt_lone_ends(const struct usdt *u);
/* Intervals cut where one opened before them ended, and continued as
 * "provider:STEM [cont.]". */
uint64_t usdt_cuts(const struct usdt *u);
void usdt_free(struct usdt *u);

#endif
