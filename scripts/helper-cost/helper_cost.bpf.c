// SPDX-License-Identifier: GPL-2.0
/* One perf_event program per piece of what a sample costs in BPF, for
 * scripts/bench-helpers.sh: each is attached alone to cpu-clock on every CPU
 * and its run_time_ns / run_cnt read from kernel.bpf_stats_enabled. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct buf {
	__u64 ips[128];
	__u8 stack[4096];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct buf);
} bufs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} rb SEC(".maps");

static __always_inline struct buf *slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&bufs, &zero);
}

SEC("perf_event")
int empty(struct bpf_perf_event_data *ctx)
{
	return 0;
}

SEC("perf_event")
int user_stack(struct bpf_perf_event_data *ctx)
{
	struct buf *b = slot();

	if (b)
		bpf_get_stack(ctx, b->ips, sizeof(b->ips), BPF_F_USER_STACK);
	return 0;
}

SEC("perf_event")
int kernel_stack(struct bpf_perf_event_data *ctx)
{
	struct buf *b = slot();

	if (b)
		bpf_get_stack(ctx, b->ips, sizeof(b->ips), 0);
	return 0;
}

#define READ_USER(name, n)                                                                         \
	SEC("perf_event")                                                                          \
	int name(struct bpf_perf_event_data *ctx)                                                  \
	{                                                                                          \
		struct buf *b = slot();                                                            \
                                                                                                   \
		if (b)                                                                             \
			bpf_probe_read_user(b->stack, n, (void *)PT_REGS_SP(&ctx->regs));          \
		return 0;                                                                          \
	}
READ_USER(read_user_16, 16)
READ_USER(read_user_512, 512)
READ_USER(read_user_4096, 4096)

#define RINGBUF(name, n)                                                                           \
	SEC("perf_event")                                                                          \
	int name(struct bpf_perf_event_data *ctx)                                                  \
	{                                                                                          \
		void *r = bpf_ringbuf_reserve(&rb, n, 0);                                          \
                                                                                                   \
		if (r)                                                                             \
			bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);                                   \
		return 0;                                                                          \
	}
RINGBUF(ringbuf_128, 128)
RINGBUF(ringbuf_640, 640)

/* A record built elsewhere, copied in: one call, or reserve + write + submit. */
SEC("perf_event")
int ringbuf_output_128(struct bpf_perf_event_data *ctx)
{
	struct buf *b = slot();

	if (b)
		bpf_ringbuf_output(&rb, b->ips, 128, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("perf_event")
int ringbuf_dynptr_128(struct bpf_perf_event_data *ctx)
{
	struct buf *b = slot();
	struct bpf_dynptr r;

	if (!b)
		return 0;
	if (bpf_ringbuf_reserve_dynptr(&rb, 128, 0, &r)) {
		bpf_ringbuf_discard_dynptr(&r, 0);
		return 0;
	}
	bpf_dynptr_write(&r, 0, b->ips, 128, 0);
	bpf_ringbuf_submit_dynptr(&r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* A per-(process, ip) hint: a hash map keyed by both, or a direct-mapped
 * array slot. Both hit after the first sample at an ip. */
struct hint_key {
	__u32 tgid, pad;
	__u64 ip;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct hint_key);
	__type(value, __u32);
} hint_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct hint_key);
} hint_array SEC(".maps");

SEC("perf_event")
int lru_hash_lookup(struct bpf_perf_event_data *ctx)
{
	struct hint_key k = {.tgid = bpf_get_current_pid_tgid() >> 32,
			     .ip = PT_REGS_IP(&ctx->regs)};
	struct buf *b = slot();
	__u32 zero = 0, *v = bpf_map_lookup_elem(&hint_hash, &k);

	if (!v)
		bpf_map_update_elem(&hint_hash, &k, &zero, BPF_ANY);
	else if (b)
		b->ips[0] = *v;
	return 0;
}

SEC("perf_event")
int array_lookup(struct bpf_perf_event_data *ctx)
{
	struct hint_key k = {.tgid = bpf_get_current_pid_tgid() >> 32,
			     .ip = PT_REGS_IP(&ctx->regs)};
	__u32 i = (__u32)(((k.ip ^ ((__u64)k.tgid << 47)) * 0x9e3779b97f4a7c15ULL) >> 48);
	struct hint_key *v = bpf_map_lookup_elem(&hint_array, &i);
	struct buf *b = slot();

	if (v && v->tgid == k.tgid && v->ip == k.ip) {
		if (b)
			b->ips[0] = v->pad;
	} else if (v) {
		*v = k;
	}
	return 0;
}

SEC("perf_event")
int ktime(struct bpf_perf_event_data *ctx)
{
	struct buf *b = slot();

	if (b)
		b->ips[0] = bpf_ktime_get_ns();
	return 0;
}

SEC("perf_event")
int comm(struct bpf_perf_event_data *ctx)
{
	struct buf *b = slot();

	if (b)
		bpf_get_current_comm(b->ips, 16);
	return 0;
}

SEC("perf_event")
int comm_loads(struct bpf_perf_event_data *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct buf *b = slot();

	if (b) {
		b->ips[0] = ((__u64 *)t->comm)[0];
		b->ips[1] = ((__u64 *)t->comm)[1];
	}
	return 0;
}
