/* Records that BPF pushes into the ring buffer, shared by bpf/ and user/.
 * Every record starts with struct ev_hdr; records vary in length, so the ring
 * buffer carries no dead bytes. */
#ifndef BPF_EVENTS_H
#define BPF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define COMM_LEN	16
#define MAX_FRAMES	127 /* per stack, as bpf_get_stack's sysctl default */

enum ev_type {
	EV_SAMPLE = 1, /* struct ev_sample */
	EV_EXEC = 2, /* struct ev_task: a recorded process called exec */
	EV_FORK = 3, /* struct ev_task: a recorded process forked a new process */
	EV_EXIT = 4, /* struct ev_task: a recorded process's last thread exited */
};

struct ev_hdr {
	__u32 type;
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu; /* bpf_get_smp_processor_id() */
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

/* flags of struct ev_sample */
#define SAMPLE_KSTACK_ERR (1u << 0) /* bpf_get_stack failed for the kernel stack */
#define SAMPLE_USTACK_ERR (1u << 1) /* ... for the user stack */
#define SAMPLE_IN_KERNEL  (1u << 2) /* the interrupted context was kernel mode */

struct ev_sample {
	struct ev_hdr hdr;
	char comm[COMM_LEN]; /* the thread's */
	__u16 nkernel; /* kernel frames, leaf first */
	__u16 nuser; /* user frames, leaf first */
	__u32 flags;
	__u64 ips[]; /* nkernel kernel ips, then nuser user ips */
};

struct ev_task {
	struct ev_hdr hdr; /* pid: the process (for EV_FORK, the parent) */
	__u32 child_pid; /* EV_FORK */
	__u32 pad;
	char comm[COMM_LEN];
};

/* Indices of the per-CPU counter array `stats`. */
enum stat_idx {
	STAT_SAMPLES, /* samples of recorded tasks, pushed or not */
	STAT_LOST, /* samples the ring buffer could not take */
	STAT_LOST_TASK, /* task events the ring buffer could not take */
	STAT_KSTACK_ERR,
	STAT_USTACK_ERR,
	STAT_NR,
};

#endif
