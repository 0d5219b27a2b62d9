/* Loads helper_cost.bpf.c and attaches one of its programs (argv[1]) to a
 * cpu-clock perf event at 999 Hz on every CPU, then waits to be killed.
 * Prints the program's id. Used by scripts/bench-helpers.sh. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "helper_cost.skel.h"

int main(int argc, char **argv)
{
	struct helper_cost_bpf *skel;
	struct bpf_program *prog;
	int cpu, ncpu = libbpf_num_possible_cpus();

	if (argc != 2) {
		fprintf(stderr, "usage: helper-cost PROGRAM\n");
		return 2;
	}
	skel = helper_cost_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "helper-cost: load: %s\n", strerror(errno));
		return 1;
	}
	prog = bpf_object__find_program_by_name(skel->obj, argv[1]);
	if (!prog) {
		fprintf(stderr, "helper-cost: no program %s\n", argv[1]);
		return 2;
	}
	for (cpu = 0; cpu < ncpu; cpu++) {
		struct perf_event_attr a = {
		    .type = PERF_TYPE_SOFTWARE,
		    .config = PERF_COUNT_SW_CPU_CLOCK,
		    .size = sizeof(a),
		    .freq = 1,
		    .sample_freq = 999,
		};
		int fd = syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0 && errno == ENODEV)
			continue; /* an offline CPU */
		if (fd < 0 || !bpf_program__attach_perf_event(prog, fd)) {
			fprintf(stderr, "helper-cost: attach %s on cpu %d: %s\n", argv[1], cpu,
				strerror(errno));
			return 1;
		}
	}
	{
		struct bpf_prog_info info = {0};
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len)) {
			fprintf(stderr, "helper-cost: prog info: %s\n", strerror(errno));
			return 1;
		}
		printf("%u\n", info.id); /* for bpftool prog show id */
	}
	fflush(stdout);
	pause();
	return 0;
}
