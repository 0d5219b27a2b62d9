/* What the running kernel's BPF offers, probed at start-up (helpers, program
 * types, kfuncs and types in its BTF), not guessed from its version: each
 * missing feature picks a fallback, and each fallback that loses something is
 * listed, with the reason, in the summary line and summary.json. */
#ifndef USER_FEATURES_H
#define USER_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

struct features {
	char kernel[128];    /* uname release */
	bool bpf_loop;	     /* bpf_loop helper (5.17) */
	bool ringbuf_dynptr; /* bpf_ringbuf_reserve_dynptr (5.19) */
	bool task_btf;	     /* bpf_get_current_task_btf (5.11) */
	bool task_pt_regs;   /* bpf_task_pt_regs (5.15) */
	bool attach_cookie;  /* bpf_get_attach_cookie for uprobes (5.15) */
	/* uprobe_multi links (6.6) are found out at attach: trace.c falls back. */
	bool iter_task_vma; /* bpf_iter_task_vma_* kfuncs (6.7) */
	/* The BTF-typed sched_switch tracepoint (--off-cpu): a kernel with
	 * tp_btf but without it has no scheduler tracepoints at all. */
	bool sched_switch_btf;
	/* Uprobe reference counters (4.20): the kernel sets USDT semaphores
	 * (the uprobe PMU's ref_ctr_offset format; libbpf uses it). */
	bool uprobe_ref_ctr;
	/* The sampler's variant: on_sample needs the first four. */
	bool compat_sampler;
};

#define MAX_DEGRADED 8
struct degraded {
	const char *what[MAX_DEGRADED]; /* the feature */
	const char *why[MAX_DEGRADED];	/* what is missing, and what it costs */
	size_t n;
};

/* Probes the kernel. 0, or -errno after an error that names the kernel, what
 * is missing and the floor (Linux 5.10 with BTF). BPFTRACE_REC_NO_FEATURES
 * (comma-separated field names above) turns features off, to test the
 * fallbacks on a kernel that has them. */
int features_probe(struct features *f);
/* Adds a degraded feature (static strings) once. */
void degraded_add(struct degraded *d, const char *what, const char *why);

#endif
