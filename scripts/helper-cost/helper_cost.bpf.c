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
