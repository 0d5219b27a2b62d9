// SPDX-License-Identifier: GPL-2.0
/* The unit test's program of the Python walk (tests/unit/test_python_bpf.c):
 * bpf/runtime/python.bpf.c's py_walk_frames at each sample, its frames sent whole
 * into a ring buffer of their own. Linked with bpf/runtime/python.bpf.o. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "bpf/runtime/python_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} py_stacks SEC(".maps");

SEC("perf_event")
int py_walk(struct bpf_perf_event_data *ctx)
{
	__u32 key = py_slot_key(PY_SLOT_SAMPLE), lost = PY_STAT_LOST;
	struct py_bpf_stack *s;
	__u64 *v;

	if (py_walk_frames(ctx, PY_BPF_FRAMES) <= 0)
		return 0;
	s = bpf_map_lookup_elem(&py_scratch, &key);
	if (s && bpf_ringbuf_output(&py_stacks, s, sizeof(*s), 0) &&
	    (v = bpf_map_lookup_elem(&py_stats, &lost)))
		*v += 1;
	return 0;
}
