/* Exact function tracing (-t SPEC): uprobes on the entry and return of every
 * matching function, attached with uprobe_multi links where the kernel has
 * them, else one probe per function. */
#ifndef USER_TRACE_H
#define USER_TRACE_H

#include <stdbool.h>
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
};

struct traced_fn {
	uint64_t dev, ino, off;
	uint32_t id;
};

/* Before load: the uprobe programs' attach types; loads them only if needed,
 * the variant with BPF cookies where the kernel has them (else by_ip). */
void trace_prepare(struct trace_bpf *t, bool uprobes, bool cookies, struct trace_links *l);
/* Without cookies: the XRay id of the function probed at offset off of the
 * file (by inode: dev is not compared, see cmp_fn); 0 if none. */
uint32_t trace_func_at(const struct trace_links *l, uint64_t dev, uint64_t ino, uint64_t off);

/* Resolves every SPEC ("GLOB" in the main executable, "OBJ:GLOB" in a
 * library, OBJ a path or a file-name prefix such as libssl.so.3) for the
 * given processes (or, with exe, a command not started yet) and attaches.
 * Function ids come from xray_func_id(). 0, or -errno after reporting. */
int trace_attach(struct trace_bpf *skel, char *const *specs, int nspecs, const pid_t *pids,
		 int npids, const char *exe, struct trace_links *out);
void trace_detach(struct trace_links *l);

#endif
