/* Exact function tracing (-t SPEC): uprobes on the entry and return of every
 * matching function, attached with uprobe_multi links where the kernel has
 * them, else one probe per function. */
#ifndef USER_TRACE_H
#define USER_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct trace_bpf;
struct bpf_link;

struct trace_links {
	struct bpf_link **links; /* single-probe fallback */
	int nlinks;
	size_t links_cap;
	int *fds; /* uprobe_multi link fds */
	int nfds;
	size_t fds_cap;
	int nfuncs; /* functions probed */
	int multi;  /* 1 when uprobe_multi was used */
	/* Without BPF cookies (kernels before 5.15): each probed function's
	 * file and offset, sorted, to find its id from the probed address. */
	bool by_ip;
	struct traced_fn *fns;
	size_t nfns, fns_cap;
	/* Every function probed (an id may repeat: one name in two files),
	 * and the calls of each id that reached user space, for the list at
	 * the end and summary.json. */
	struct trace_func *funcs;
	size_t nlisted, funcs_cap;
	uint64_t *calls; /* by XRay function id */
	size_t calls_cap;
	struct xray *xray; /* set by the caller: the registry of those ids */
};

struct trace_func {
	uint32_t id;
	char *name; /* as samples name it */
	char *obj;  /* the file's name */
};

struct traced_fn {
	uint64_t dev, ino, off;
	uint32_t id;
};

/* Before load: the uprobe programs' attach types; loads them only if needed,
 * the variant with BPF cookies where the kernel has them (else by_ip). */
/* A uprobe_multi link of prog_fd on the functions at offsets of path (each
 * with its cookie); return probes when ret; only in process pid when > 0,
 * whose breakpoints are then written into that process alone. The link's
 * fd, or -errno (-EINVAL and the like where the kernel has none: 6.6). */
int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
		      const uint64_t *cookies, size_t n, bool ret, pid_t pid);
/* The attach type uprobe_multi programs are loaded with. */
#define ATTACH_TRACE_UPROBE_MULTI 48

void trace_prepare(struct trace_bpf *t, bool uprobes, bool cookies, struct trace_links *l);
/* Without cookies: the XRay id of the function probed at offset off of the
 * file (by inode: dev is not compared, see cmp_fn); 0 if none. */
uint32_t trace_func_at(const struct trace_links *l, uint64_t dev, uint64_t ino, uint64_t off);

/* Resolves every SPEC ("GLOB" in the main executable, "OBJ:GLOB" in a
 * library, OBJ a path or a file-name prefix such as libssl.so.3) for the
 * given processes (or, with exe, a command not started yet, pids its
 * process) and attaches, warning when processes not recorded (in no BPF
 * target) map a file probed.
 * Function ids come from xray_func_id(). 0, or -errno after reporting. */
int trace_attach(struct trace_bpf *skel, char *const *specs, int nspecs, const pid_t *pids,
		 int npids, const char *exe, struct trace_links *out);
/* Detaches the probes; what the drain still needs (the functions by
 * address, their counts) stays until trace_free. */
void trace_detach(struct trace_links *l);
void trace_free(struct trace_links *l);
/* A call of function id entered (an entry event drained). */
void trace_count_call(struct trace_links *l, uint32_t id);
/* The functions probed, each id once, most called first: *out malloc'd
 * (the names stay the links'), its count returned; 0 on ENOMEM too. */
size_t trace_funcs(const struct trace_links *l, const struct trace_func **out[]);
uint64_t trace_calls_of(const struct trace_links *l, uint32_t id);
/* Lists each function probed with its calls (info), and warns of those
 * never called, naming the usual reason. */
void trace_report(const struct trace_links *l);

#endif
