// SPDX-License-Identifier: GPL-2.0
/* Stack sampler: a perf_event program on every CPU pushes one ev_sample per
 * sample of a recorded process into a ring buffer; tracepoints keep the set of
 * recorded processes (followed across fork) and report exec and exit. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/events.h"

char LICENSE[] SEC("license") = "GPL";

const volatile bool filter_pids = false; /* only tgids in `targets` */
const volatile bool follow_forks = true; /* children of targets become targets */
const volatile bool include_idle = false; /* with !filter_pids: the idle task too */
const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
/* Wake the reader once this much is waiting; otherwise it drains on a timer.
 * A wakeup per record costs ~6.5 us (irq_work), more than the sample itself. */
const volatile __u64 wakeup_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Per-process count of samples the ring buffer could not take. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} lost_by_pid SEC(".maps");

#define SAMPLE_MAX (sizeof(struct ev_sample) + 2 * MAX_FRAMES * sizeof(__u64))

/* The record is built here, then copied at its true length: ring-buffer
 * reservations are fixed-size, and the BPF stack is only 512 bytes. */
struct scratch {
	__u8 buf[SAMPLE_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline __u64 rb_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									 : BPF_RB_NO_WAKEUP;
}

static __always_inline bool is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u32 zero = 0;
	struct ev_sample *s;
	struct scratch *sc;
	long n;
	__u64 off, size;

	if (filter_pids) {
		if (!is_target(tgid))
			return 0;
	} else if (tid == 0 && !include_idle) {
		return 0;
	}
	count(STAT_SAMPLES);

	sc = bpf_map_lookup_elem(&scratch_map, &zero);
	if (!sc)
		return 0;
	s = (void *)sc->buf;
	s->hdr.type = EV_SAMPLE;
	s->hdr.pid = tgid;
	s->hdr.tid = tid;
	s->hdr.cpu = bpf_get_smp_processor_id();
	s->hdr.time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	s->flags = (PT_REGS_IP(&ctx->regs) >= 0xffff800000000000ULL) ? SAMPLE_IN_KERNEL : 0;
	s->nkernel = 0;
	s->nuser = 0;

	off = 0;
	if (kernel_stacks && (s->flags & SAMPLE_IN_KERNEL)) {
		n = bpf_get_stack(ctx, s->ips, MAX_FRAMES * sizeof(__u64), 0);
		if (n < 0) {
			s->flags |= SAMPLE_KSTACK_ERR;
			count(STAT_KSTACK_ERR);
		} else {
			off = (__u64)n / sizeof(__u64);
		}
	}
	if (off > MAX_FRAMES)
		off = MAX_FRAMES;
	s->nkernel = off;
	if (user_stacks && tgid != 0) {
		n = bpf_get_stack(ctx, &s->ips[off], MAX_FRAMES * sizeof(__u64), BPF_F_USER_STACK);
		if (n < 0) {
			s->flags |= SAMPLE_USTACK_ERR;
			count(STAT_USTACK_ERR);
		} else {
			s->nuser = (__u64)n / sizeof(__u64);
		}
	}
	size = sizeof(*s) + ((__u64)s->nkernel + s->nuser) * sizeof(__u64);
	if (size > SAMPLE_MAX)
		size = SAMPLE_MAX;
	if (bpf_ringbuf_output(&events, s, size, rb_flags())) {
		__u64 one = 1, *v;

		count(STAT_LOST);
		v = bpf_map_lookup_elem(&lost_by_pid, &tgid);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			bpf_map_update_elem(&lost_by_pid, &tgid, &one, BPF_NOEXIST);
	}
	return 0;
}

static __always_inline void task_event(__u32 type, __u32 pid, __u32 child)
{
	struct ev_task *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(STAT_LOST_TASK);
		return;
	}
	e->hdr.type = type;
	e->hdr.pid = pid;
	e->hdr.tid = (__u32)bpf_get_current_pid_tgid();
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.time_ns = bpf_ktime_get_ns();
	e->child_pid = child;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/* Rare and time-critical (the reader reads /proc/PID/maps now), so wake it. */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 cpid = BPF_CORE_READ(child, pid);
	__u8 one = 1;

	/* Threads share the tgid and are recorded already. */
	if (!filter_pids || !follow_forks || cpid != (__u32)BPF_CORE_READ(child, tgid))
		return 0;
	if (!is_target(ptgid))
		return 0;
	bpf_map_update_elem(&targets, &cpid, &one, BPF_ANY);
	task_event(EV_FORK, ptgid, cpid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (filter_pids && !is_target(tgid))
		return 0;
	task_event(EV_EXEC, tgid, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	/* The leader's exit; the tracepoint fires before the mm is released. */
	if ((__u32)id != tgid || !filter_pids || !is_target(tgid))
		return 0;
	task_event(EV_EXIT, tgid, 0);
	return 0;
}
