// SPDX-License-Identifier: GPL-2.0
/* The Python frame walk in BPF, a compilation unit of its own (not yet
 * wired into the sampler): at a perf_event sample of a process in
 * py_procs, the sampled thread's PyThreadState is found in _PyRuntime's
 * first interpreter (by its native thread id on 3.11 on, before by its
 * pthread_t, which is the thread's fs base on x86-64 glibc), then its
 * frames are read innermost first: a code object address and a byte offset
 * per frame, as user/python.c's python_walk reads them (py_frame_decode),
 * which names them.
 * Bounded loops only: loads on 5.10. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/python.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct py_bpf_proc);
} py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} py_stacks SEC(".maps");

/* Samples by outcome (enum py_bpf_stat), for the tests and the summary. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PY_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} py_stats SEC(".maps");

static __always_inline void count(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&py_stats, &what);

	if (v)
		*v += 1;
}

static __always_inline int rd_ptr(__u64 addr, __u32 off, __u64 *v)
{
	if (off == PY_OFF_NONE)
		return -1;
	return bpf_probe_read_user(v, sizeof(*v), (void *)(addr + off));
}

/* The sampled thread's PyThreadState, or 0. */
static __always_inline __u64 find_tstate(const struct py_bpf_proc *p, __u32 tid)
{
	const struct py_layout *l = &p->layout;
	__u64 interp = 0, ts = 0, want = tid, id = 0;
	bool native = l->tstate_native_thread_id != PY_OFF_NONE;

	if (!native) { /* pthread_self(): the thread's fs base */
		struct task_struct *task = (void *)bpf_get_current_task();

		want = BPF_CORE_READ(task, thread.fsbase);
	}
	if (rd_ptr(p->runtime, l->runtime_interp_head, &interp) || !interp ||
	    rd_ptr(interp, l->interp_tstate_head, &ts))
		return 0;
	for (int i = 0; i < PY_BPF_THREADS && ts; i++) {
		if (rd_ptr(ts, native ? l->tstate_native_thread_id : l->tstate_thread_id, &id))
			return 0;
		if (id == want)
			return ts;
		if (rd_ptr(ts, l->tstate_next, &ts))
			return 0;
	}
	return 0;
}

SEC("perf_event")
int py_walk(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), ts, frame = 0;
	__u32 tgid = pid_tgid >> 32;
	const struct py_bpf_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	const struct py_layout *l;
	struct py_bpf_stack *s;
	__u32 n = 0;

	if (!p)
		return 0;
	l = &p->layout;
	ts = find_tstate(p, (__u32)pid_tgid);
	if (!ts) {
		count(PY_STAT_NO_TSTATE);
		return 0;
	}
	if (rd_ptr(ts, l->tstate_frame, &frame) ||
	    (l->cframe_current_frame != PY_OFF_NONE && frame &&
	     rd_ptr(frame, l->cframe_current_frame, &frame)) ||
	    l->frame_code == PY_OFF_NONE || l->frame_lasti == PY_OFF_NONE ||
	    l->frame_back == PY_OFF_NONE || l->frame_owner == PY_OFF_NONE) {
		count(PY_STAT_FAULT);
		return 0;
	}
	s = bpf_ringbuf_reserve(&py_stacks, sizeof(*s), 0);
	if (!s) {
		count(PY_STAT_LOST);
		return 0;
	}
	s->tgid = tgid;
	s->tid = (__u32)pid_tgid;
	s->truncated = 0;
	/* Each frame as it is in memory: its code object, the word at its
	 * instruction field and its owner byte (where the version has one:
	 * user space fills frame_owner with a valid offset either way). What
	 * they mean is user space's (py_frame_decode): one path through the
	 * loop keeps the verifier's work linear in the frames. */
	for (int i = 0; i < PY_BPF_FRAMES; i++) {
		__u32 k = n & (PY_BPF_FRAMES - 1);

		if (!frame)
			break;
		if (bpf_probe_read_user(&s->frames[k].code, 8, (void *)(frame + l->frame_code)) ||
		    bpf_probe_read_user(&s->frames[k].lasti, 8, (void *)(frame + l->frame_lasti)) ||
		    bpf_probe_read_user(&s->frames[k].owner, 1, (void *)(frame + l->frame_owner)))
			goto fault;
		n++;
		if (bpf_probe_read_user(&frame, 8, (void *)(frame + l->frame_back)))
			goto fault;
	}
	if (frame)
		s->truncated = 1;
	s->nframes = n;
	count(PY_STAT_WALKED);
	bpf_ringbuf_submit(s, 0);
	return 0;
fault:
	s->nframes = n;
	s->truncated = 1;
	count(PY_STAT_FAULT);
	bpf_ringbuf_submit(s, 0);
	return 0;
}
