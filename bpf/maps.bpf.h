/* Maps and helpers shared by the BPF programs. Each object defines them; the
 * loader makes the later objects reuse the first one's maps (same fds), so
 * every program writes into one ring buffer and reads one target set. */
#ifndef BPF_MAPS_BPF_H
#define BPF_MAPS_BPF_H

/* SHARED, SHARED_INIT: the maps and rodata of this header, bpf/sampler.bpf.h
 * and bpf/cfi_walk.bpf.h are defined by an object's first unit and declared
 * extern (BPF_SHARED_EXTERN defined before the includes) in the units the
 * static linker joins to it: bpf/cfi_walk.bpf.c and bpf/offcpu.bpf.c, after
 * sample.bpf.c (the Makefile's sample.linked.o; linked after the defining
 * unit, as bpf/runtime/python_maps.bpf.h says why). */
#ifdef BPF_SHARED_EXTERN
#define SHARED extern
#define SHARED_INIT(v)
#else
#define SHARED
#define SHARED_INIT(v) = v
#endif

/* Wake the reader once this much is waiting; otherwise it drains on a timer.
 * A wakeup per record costs ~6.5 us (irq_work), more than the sample itself. */
SHARED const volatile __u64 wakeup_bytes SHARED_INIT(1 << 20);

SHARED struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} events SEC(".maps");

SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} targets SEC(".maps");

SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* The return address at a traced call's entry, as its uprobe's entry
 * program saw it (bpf/trace.bpf.c), on this CPU: after the programs the
 * kernel puts the uretprobe trampoline in that slot, and for a moment has
 * the real address in no return_instance yet; a sample then takes it from
 * here (bpf/uprobe_regs.bpf.h). */
struct entry_ra {
	__u64 sp, ra;
	__u32 tid, pad;
};
SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct entry_ra);
} entry_ra SEC(".maps");

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

/* Every record's header; the time and CPU are read here, in kernel context. */
static __always_inline void fill_hdr(struct ev_hdr *h, __u32 type, __u32 pid, __u32 tid)
{
	h->type = type;
	h->pid = pid;
	h->tid = tid;
	h->cpu = bpf_get_smp_processor_id();
	h->time_ns = bpf_ktime_get_ns();
}

static __always_inline bool is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

#endif
