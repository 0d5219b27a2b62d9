// SPDX-License-Identifier: GPL-2.0
/* Exact function tracing (-t): a uprobe on entry and a uretprobe on return of
 * every traced function, the XRay function id carried as the BPF cookie; and
 * CPU migrations of recorded threads, for the XRay traces' NewCPUId records.
 * Each program exists three times: uprobe_multi links need the program
 * loaded with that attach type, single uprobes (the fallback) without it,
 * and kernels without bpf_get_attach_cookie (before 5.15) get the _ip
 * variants, which send the probed address instead: user space finds the
 * function from it, and matches each return to the thread's innermost
 * open call (uretprobes return in LIFO order). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/events.h"
#include "bpf/maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#ifndef PT_REGS_PARM6 /* libbpf 1.1 stops at 5; x86_64 passes the 6th in r9 */
#define PT_REGS_PARM6(x) ((x)->r9)
#endif

const volatile __u32 trace_args = 0; /* integer arguments recorded at entry */

static __always_inline int emit_call(struct pt_regs *ctx, __u8 kind, const bool by_ip)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct ev_call e;
	__u32 n = 0;

	if (!is_target(tgid))
		return 0;
	count(STAT_CALLS);
	fill_hdr(&e.hdr, EV_CALL, tgid, (__u32)id);
	e.func_id = by_ip ? 0 : bpf_get_attach_cookie(ctx);
	e.kind = kind;
	e.pad = 0;
	if (kind == CALL_ENTRY && trace_args) {
		e.args[0] = PT_REGS_PARM1(ctx);
		e.args[1] = PT_REGS_PARM2(ctx);
		e.args[2] = PT_REGS_PARM3(ctx);
		e.args[3] = PT_REGS_PARM4(ctx);
		e.args[4] = PT_REGS_PARM5(ctx);
		e.args[5] = PT_REGS_PARM6(ctx);
		n = trace_args > MAX_TRACE_ARGS ? MAX_TRACE_ARGS : trace_args;
	}
	/* An entry's ip is the probed address (the kernel sets it back to the
	 * breakpoint before the handlers run); it follows the arguments. */
	if (by_ip && kind == CALL_ENTRY) {
		e.kind |= CALL_IP;
		if (n >= MAX_TRACE_ARGS)
			n = MAX_TRACE_ARGS - 1;
		e.args[n] = PT_REGS_IP(ctx); /* n is known at load: trace_args is read-only */
	}
	if (kind == CALL_ENTRY) {
		__u32 zero = 0;
		struct entry_ra *ra = bpf_map_lookup_elem(&entry_ra, &zero);
		__u64 sp = PT_REGS_SP(ctx);

		if (ra && !bpf_probe_read_user(&ra->ra, sizeof(ra->ra), (void *)sp)) {
			ra->sp = sp;
			ra->tid = (__u32)id;
		}
	}
	e.nargs = n;
	if (e.kind & CALL_IP)
		n++;
	if (bpf_ringbuf_output(&events, &e, sizeof(e) - (MAX_TRACE_ARGS - n) * sizeof(__u64),
			       rb_flags()))
		count(STAT_LOST_CALLS);
	return 0;
}

SEC("uprobe")
int on_entry(struct pt_regs *ctx)
{
	return emit_call(ctx, CALL_ENTRY, false);
}

SEC("uretprobe")
int on_return(struct pt_regs *ctx)
{
	return emit_call(ctx, CALL_EXIT, false);
}

SEC("uprobe")
int on_entry_ip(struct pt_regs *ctx)
{
	return emit_call(ctx, CALL_ENTRY, true);
}

SEC("uretprobe")
int on_return_ip(struct pt_regs *ctx)
{
	return emit_call(ctx, CALL_EXIT, true);
}

/* Loaded with expected_attach_type BPF_TRACE_UPROBE_MULTI by the loader. */
SEC("uprobe")
int on_entry_multi(struct pt_regs *ctx)
{
	return emit_call(ctx, CALL_ENTRY, false);
}

SEC("uprobe")
int on_return_multi(struct pt_regs *ctx)
{
	return emit_call(ctx, CALL_EXIT, false);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(on_migrate, struct task_struct *p, int dest_cpu)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ev_hdr *e;

	if (!is_target(tgid))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->type = EV_MIGRATE;
	e->pid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	e->cpu = dest_cpu;
	e->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}
