#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "user/features.h"
#include "user/util.h"

#define FLOOR "Linux 5.10 or later with BTF (CONFIG_DEBUG_INFO_BTF)"

/* 1 if the helper can be called from programs of that type, 0 if not, and
 * 1 when the probe itself fails otherwise: the load will then say why. */
static bool helper(enum bpf_prog_type t, enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(t, id, NULL) != 0;
}

static bool turned_off(const char *name)
{
	return list_has(getenv("BPFTRACE_REC_NO_FEATURES"), name);
}

static bool kfunc(const struct btf *btf, const char *name)
{
	return btf && btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) >= 0;
}

int features_probe(struct features *f)
{
	struct utsname u;
	struct btf *btf;

	memset(f, 0, sizeof(*f));
	if (!uname(&u))
		snprintf(f->kernel, sizeof(f->kernel), "%s", u.release);
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		err("kernel %s has no BTF (/sys/kernel/btf/vmlinux: %s); bpftrace-rec needs " FLOOR,
		    f->kernel, strerror(errno));
		return -ENOTSUP;
	}
	btf = btf__load_vmlinux_btf();
	/* The floor: ring buffers (5.8), BTF-typed tracepoints (5.5: the
	 * kernel's BTF has their btf_trace_* types; libbpf 1.1 cannot probe
	 * the program type itself), user memory reads (5.5). */
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) <= 0 || !btf ||
	    btf__find_by_name_kind(btf, "btf_trace_sched_process_exec", BTF_KIND_TYPEDEF) < 0 ||
	    !helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_probe_read_user)) {
		err("kernel %s lacks BPF ring buffers or BTF-typed tracepoints; bpftrace-rec "
		    "needs " FLOOR,
		    f->kernel);
		btf__free(btf);
		return -ENOTSUP;
	}
#define PROBE(field, expr) f->field = !turned_off(#field) && (expr)
	PROBE(bpf_loop, helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop));
	PROBE(ringbuf_dynptr, helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_ringbuf_reserve_dynptr));
	PROBE(task_btf, helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_current_task_btf));
	PROBE(task_pt_regs, helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_task_pt_regs));
	PROBE(attach_cookie, helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie));
	PROBE(iter_task_vma, kfunc(btf, "bpf_iter_task_vma_new"));
	PROBE(sched_switch_btf,
	      btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF) >= 0);
	PROBE(uprobe_ref_ctr,
	      !access("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", F_OK));
	btf__free(btf);
#undef PROBE
	f->compat_sampler = !(f->bpf_loop && f->ringbuf_dynptr && f->task_btf && f->task_pt_regs);
	debug("kernel %s: bpf_loop %d, ringbuf dynptr %d, task_btf %d, task_pt_regs %d, "
	      "attach cookie %d, iter_task_vma %d: %s sampler",
	      f->kernel, f->bpf_loop, f->ringbuf_dynptr, f->task_btf, f->task_pt_regs,
	      f->attach_cookie, f->iter_task_vma, f->compat_sampler ? "compat" : "full");
	return 0;
}

void degraded_add(struct degraded *d, const char *what, const char *why)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (!strcmp(d->what[i], what))
			return;
	if (d->n < MAX_DEGRADED) {
		d->what[d->n] = what;
		d->why[d->n++] = why;
	}
}
