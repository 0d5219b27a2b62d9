// SPDX-License-Identifier: GPL-2.0
/* USDT probes (-t usdt:BIN:PROBES): one program for every probe, attached by
 * libbpf's bpf_program__attach_usdt, which decodes the probes' argument
 * specs and sets their semaphores through the kernel's uprobe reference
 * counters (usdt.bpf.h's maps; on kernels without BPF cookies it finds the
 * spec from the probed address). Each firing of a recorded process is sent
 * as an ev_usdt with its arguments; user space pairs a start with its done
 * (user/usdt.c). String arguments (Python's file and function names) are
 * read here, where the pointer is valid, but only the first time a
 * (process, pointer, first 8 bytes) is seen: the names of a hot function
 * cost one 8-byte read per call, not a string copy. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "bpf/events.h"
#include "bpf/maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* -p and --: only the target set's processes (probes are attached to the
 * binary for every process, so that forked children, such as PostgreSQL's
 * backends, fire them too); -a: every process but ours. */
const volatile bool filter_pids = true;
const volatile __u32 self_tgid = 0;

struct str_key {
	__u32 tgid, pad;
	__u64 ptr, head;
};

/* The strings already sent; LRU: one evicted is sent again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct str_key);
	__type(value, __u8);
} usdt_strs SEC(".maps");

/* Sends the string at ptr once per (tgid, ptr, head). */
static __always_inline void send_str(__u32 tgid, __u32 tid, __u64 ptr)
{
	struct str_key k = {.tgid = tgid, .ptr = ptr};
	struct ev_usdt_str *e;
	__u8 one = 1;
	long n;

	if (!ptr || bpf_probe_read_user(&k.head, sizeof(k.head), (void *)ptr)) {
		/* A string shorter than 8 bytes at the end of a page fails the
		 * 8-byte read: read what the string holds instead. */
		char b[8] = {};

		if (!ptr || bpf_probe_read_user_str(b, sizeof(b), (void *)ptr) < 0) {
			count(STAT_USDT_STR_FAULT);
			return;
		}
		__builtin_memcpy(&k.head, b, sizeof(k.head));
	}
	if (bpf_map_lookup_elem(&usdt_strs, &k))
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(STAT_USDT_LOST);
		return;
	}
	fill_hdr(&e->hdr, EV_USDT_STR, tgid, tid);
	e->ptr = ptr;
	e->head = k.head;
	n = bpf_probe_read_user_str(e->s, sizeof(e->s), (void *)ptr);
	if (n < 0) {
		count(STAT_USDT_STR_FAULT);
		bpf_ringbuf_discard(e, 0);
		return;
	}
	e->len = n;
	e->truncated = n == sizeof(e->s);
	bpf_ringbuf_submit(e, rb_flags());
	count(STAT_USDT_STRS);
	/* Only once sent: a string whose record was lost is read again. */
	bpf_map_update_elem(&usdt_strs, &k, &one, BPF_ANY);
}

SEC("usdt")
int on_usdt(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie;
	__u32 tgid = id >> 32, strs, nargs, i;
	struct ev_usdt e;

	if (filter_pids ? !is_target(tgid) : tgid == self_tgid)
		return 0;
	count(STAT_USDT_FIRED);
	cookie = bpf_usdt_cookie(ctx);
	strs = USDT_COOKIE_STRS(cookie);
	nargs = USDT_COOKIE_NARGS(cookie);
	fill_hdr(&e.hdr, EV_USDT, tgid, (__u32)id);
	e.probe = USDT_COOKIE_PROBE(cookie);
	e.pad = 0;
	__builtin_memset(e.args, 0, sizeof(e.args));
	bpf_get_current_comm(e.comm, sizeof(e.comm));
	for (i = 0; i < MAX_TRACE_ARGS; i++) {
		long v = 0;

		if (i >= nargs)
			break;
		bpf_usdt_arg(ctx, i, &v);
		e.args[i] = v;
		if (strs & (1u << i))
			send_str(tgid, (__u32)id, v);
	}
	e.nargs = i;
	/* The whole record, its unused arguments zero: a length computed from
	 * i is not bounded for 5.10's verifier ("R3 min value is negative"),
	 * and 48 bytes more cost less than a bound it keeps. */
	if (bpf_ringbuf_output(&events, &e, sizeof(e), rb_flags()))
		count(STAT_USDT_LOST);
	return 0;
}
