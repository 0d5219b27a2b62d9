/* bpftrace-rec: command-line options. */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bpf/events.h"
#include "user/continuous.h"
#include "user/record.h"
#include "user/report.h"
#include "user/target.h"
#include "user/util.h"

const char *argp_program_version = "bpftrace-rec 0.1";
const char *argp_program_bug_address = NULL;

/* --help fits one screen (at most 60 lines), the common options first; every
 * detail is in bpftrace-rec(8), built from docs/bpftrace-rec.8.scd. */
static const char doc[] =
    "Record CPU profiles, flame graphs and XRay traces of live processes with BPF.\n"
    "\v"
    "Examples:\n"
    "  bpftrace-rec -p 1234            # until Ctrl-C or the process exits\n"

    "  bpftrace-rec -- ./bench         # run ./bench, record it to its end\n"

    "Files: ./bpftrace-rec.out (older to old/); read: bpftrace-rec report DIR\n";

static const char args_doc[] = "[-- COMMAND [ARGS...]]";

enum {
	OPT_IDLE = 0x100,
	OPT_EVENT,
	OPT_NO_INHERIT,
	OPT_RINGBUF,
	OPT_NO_KERNEL,
	OPT_NO_USER,
	OPT_INCLUDE_SELF,
	OPT_CALL_GRAPH,
	OPT_TRACE_ARGS,
	OPT_XRAY_VERSION,
	OPT_FDR_BUFFER,
	OPT_FLIGHT,
	OPT_JITDUMP,
	OPT_UNWIND_MIB,
	OPT_MAX_STACK,
	OPT_OFF_CPU,
	OPT_OFF_CPU_MIN,
	OPT_PUSH,
	OPT_PUSH_HEADERS,
	OPT_SERVICE_NAME,
	OPT_OFF_CPU_ENTRIES,
	OPT_WINDOW,
	OPT_RETAIN,
	OPT_SPOOL_MAX,
	OPT_HEAP,
	OPT_HEAP_RATE,
};

/* Groups: the common options (1), what else to record (2), how (3),
 * output (4); argp sorts each group by name. */
static const struct argp_option opts[] = {
    {NULL, 0, NULL, 0, "Common options (give one of -p, -a or -- COMMAND):", 1},
    {"pid", 'p', "PID[,PID...]", 0, "Record these processes and their children", 1},
    {"all-cpus", 'a', NULL, 0, "Record the whole system", 1},
    {"duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: Ctrl-C, or the end)", 1},
    {"freq", 'F', "HZ", 0, "Samples per second per CPU (default 99)", 1},
    {"output", 'o', "DIR", 0, "Output directory (default ./bpftrace-rec.out)", 1},
    {"off-cpu", OPT_OFF_CPU, NULL, 0, "Also record where threads wait off the CPU", 1},
    {"heap", OPT_HEAP, NULL, 0, "Also write heap.pb.gz (malloc in use; --heap-rate)", 1},
    {"trace", 't', "[OBJ:]GLOB", 0,
     "Trace these calls exactly: 'parse_*', 'libssl.so.3:SSL_*', 'usdt:postgres:query__*'", 1},
    {"quiet", 'q', NULL, 0, "No status line or summary on stderr", 1},
    {"verbose", 'v', NULL, 0, "More messages (twice: libbpf's too)", 1},

    {NULL, 0, NULL, 0, "What else to record:", 2},
    {"off-cpu-min", OPT_OFF_CPU_MIN, "USEC", 0, "With --off-cpu, leave out shorter waits", 2},
    {"trace-args", OPT_TRACE_ARGS, "N", 0, "With -t, record N integer arguments (at most 6)", 2},
    {"jitdump", OPT_JITDUMP, "PATH", 0, "Name JIT frames from this perf jitdump file too", 2},
    {"idle", OPT_IDLE, NULL, 0, "With -a, keep samples of idle CPUs", 2},
    {"include-self", OPT_INCLUDE_SELF, NULL, 0, "With -a, sample bpftrace-rec itself too", 2},
    {"no-inherit", OPT_NO_INHERIT, NULL, 0, "Not the targets' descendants (running or forked)", 2},
    {"no-kernel", OPT_NO_KERNEL, NULL, 0, "No kernel stacks", 2},
    {"no-user", OPT_NO_USER, NULL, 0, "No user stacks", 2},

    {NULL, 0, NULL, 0, "How:", 3},
    {"call-graph", OPT_CALL_GRAPH, "cfi|fp|dwarf[,SIZE]", 0,
     "User stack walk (default cfi: .eh_frame in BPF)", 3},
    {"unwind-mib", OPT_UNWIND_MIB, "MIB", 0, "Kernel memory for the cfi tables (default 64)", 3},
    {"event", OPT_EVENT, "EVENT", 0, "cycles or cpu-clock (default: cycles if there)", 3},
    {"max-stack", OPT_MAX_STACK, "N", 0, "User frames walked at most (default 1024)", 3},
    {"ringbuf-size", OPT_RINGBUF, "MIB", 0, "BPF ring buffer size, a power of 2", 3},

    {NULL, 0, NULL, 0, "Output files:", 4},
    /* Two names of one option, each with its short form: as an alias,
     * argp listed "-P, -G, --per-process, --gperftools", four options. */
    {"per-process", 'P', NULL, 0, "With -a, also write each process's own files", 4},
    {"gperftools", 'G', NULL, 0, "The same as -P (cpu-PID.prof for gperftools)", 4},
    {"xray-version", OPT_XRAY_VERSION, "1|5", 0, "XRay FDR version (default 5)", 4},
    {"fdr-buffer-size", OPT_FDR_BUFFER, "SIZE", 0, "Bytes per XRay buffer", 4},
    {"flight-recorder", OPT_FLIGHT, "SIZE", 0, "Keep the newest SIZE bytes of -t events a thread",
     4},
    {"push", OPT_PUSH, "KIND=URL", 0, "Also send the profile: otlp=URL, pyroscope=URL", 4},
    {"push-headers", OPT_PUSH_HEADERS, "FILE", 0, "--push credentials: HTTP headers, a line each",
     4},
    {"service-name", OPT_SERVICE_NAME, "NAME", 0, "--push's service.name (default: the program)",
     4},
    {"window", OPT_WINDOW, "SECONDS", 0, "Until stopped, a profile of every SECONDS", 4},
    {"retain", OPT_RETAIN, "KEEP", 0, "--window's kept: count=N,age=SECONDS,size=BYTES", 4},
    {"spool-max", OPT_SPOOL_MAX, "BYTES", 0, "Bound of --push's spool on disk (default 256M)", 4},
    {"off-cpu-entries", OPT_OFF_CPU_ENTRIES, "N", 0, "With --off-cpu, BPF's (thread, stack) sums",
     2},
    /* Named in --heap's line: --help keeps to one screen. */
    {"heap-rate", OPT_HEAP_RATE, "BYTES", OPTION_HIDDEN, "--heap's mean bytes a sample", 2},
    {0},
};

static long parse_long(const char *s, const char *opt, long min, long max, struct argp_state *st)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		argp_error(st, "%s %s: expected a whole number from %ld to %ld", opt, s, min, max);
	return v;
}

/* A size in bytes, with an optional K, M or G suffix. */
static uint64_t parse_size(const char *s, const char *opt, struct argp_state *st)
{
	uint64_t v = 0;

	if (parse_size_bytes(s, &v))
		argp_error(st, "%s %s: expected a size such as 65536, 512K or 4M", opt, s);
	return v;
}

static void parse_pids(const char *arg, struct argp_state *st)
{
	char *copy = xstrdup(arg), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (env.npids >= MAX_PIDS)
			argp_error(st, "-p: at most %d pids", MAX_PIDS);
		env.pids[env.npids++] = parse_long(tok, "-p", 1, INT_MAX, st);
	}
	free(copy);
}

static void parse_call_graph(const char *arg, struct argp_state *st)
{
	const char *comma = strchr(arg, ',');
	size_t len = comma ? (size_t)(comma - arg) : strlen(arg);

	if (len == 3 && !strncmp(arg, "cfi", 3)) {
		env.call_graph = CG_CFI;
		if (comma)
			argp_error(st, "--call-graph %s: cfi takes no size", arg);
	} else if (len == 2 && !strncmp(arg, "fp", 2)) {
		env.call_graph = CG_FP;
		if (comma)
			argp_error(st, "--call-graph %s: fp takes no size", arg);
	} else if (len == 5 && !strncmp(arg, "dwarf", 5)) {
		env.call_graph = CG_DWARF;
		if (comma) {
			env.stack_copy =
			    parse_long(comma + 1, "--call-graph dwarf,SIZE", 8, MAX_STACK_COPY, st);
			env.stack_copy &= ~7u;
		}
	} else {
		argp_error(st, "--call-graph %s: expected cfi, fp or dwarf[,SIZE]", arg);
	}
}

static error_t parse_arg(int key, char *arg, struct argp_state *st)
{
	char *end;

	switch (key) {
	case 'p':
		parse_pids(arg, st);
		break;
	case 'a':
		env.all = true;
		break;
	case 'F':
		/* Range against the sysctl is checked at run time, with its value. */
		env.freq = parse_long(arg, "-F", 1, INT_MAX, st);
		break;
	case OPT_EVENT:
		if (strcmp(arg, "cycles") && strcmp(arg, "cpu-clock"))
			argp_error(st, "--event %s: expected cycles or cpu-clock", arg);
		env.event = arg;
		break;
	case 'd':
		errno = 0;
		env.duration = strtod(arg, &end);
		/* inf is no duration: without -d the run already goes on until
		 * stopped. */
		if (errno || end == arg || *end || !(env.duration > 0) || !isfinite(env.duration))
			argp_error(st, "-d %s: expected a positive number of seconds", arg);
		break;
	case 'o': {
		/* DIR/ is DIR: the paths printed are DIR/FILE, not DIR//FILE. */
		char *dir = xstrdup(arg);

		for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
			dir[n - 1] = 0;
		env.outdir = dir;
		break;
	}
	case OPT_IDLE:
		env.idle = true;
		break;
	case 'P':
	case 'G':
		env.per_process = true;
		break;
	case 't':
		/* USDT probes (user/usdt.c) have their own path. */
		if (!strncmp(arg, "usdt:", 5)) {
			if (env.nusdts >= (int)(sizeof(env.usdts) / sizeof(env.usdts[0])))
				argp_error(st, "-t usdt: at most %zu specs",
					   sizeof(env.usdts) / sizeof(env.usdts[0]));
			env.usdts[env.nusdts++] = arg;
			break;
		}
		if (env.ntraces >= (int)(sizeof(env.traces) / sizeof(env.traces[0])))
			argp_error(st, "-t: at most %zu patterns",
				   sizeof(env.traces) / sizeof(env.traces[0]));
		env.traces[env.ntraces++] = arg;
		break;
	case OPT_XRAY_VERSION:
		env.xray_version = parse_long(arg, "--xray-version", 1, 5, st);
		if (env.xray_version != 1 && env.xray_version != 5)
			argp_error(st, "--xray-version %s: expected 1 or 5", arg);
		break;
	case OPT_FDR_BUFFER:
		env.fdr_buffer_size = parse_size(arg, "--fdr-buffer-size", st);
		break;
	case OPT_JITDUMP:
		env.jitdump = arg;
		break;
	case OPT_FLIGHT:
		env.flight_recorder = parse_size(arg, "--flight-recorder", st);
		break;
	case OPT_TRACE_ARGS:
		env.trace_args = parse_long(arg, "--trace-args", 0, MAX_TRACE_ARGS, st);
		break;
	case OPT_NO_INHERIT:
		env.no_inherit = true;
		break;
	case OPT_NO_KERNEL:
		env.no_kernel = true;
		break;
	case OPT_CALL_GRAPH:
		parse_call_graph(arg, st);
		break;
	case OPT_UNWIND_MIB:
		env.unwind_mib = parse_long(arg, "--unwind-mib", 1, 4096, st);
		break;
	case OPT_MAX_STACK:
		env.max_stack = parse_long(arg, "--max-stack", 1, MAX_USER_STACK, st);
		break;
	case OPT_HEAP:
		env.heap = true;
		break;
	case OPT_HEAP_RATE:
		env.heap_rate = (uint64_t)parse_long(arg, "--heap-rate", 1, 1L << 40, st);
		break;
	case OPT_OFF_CPU:
		env.off_cpu = true;
		break;
	case OPT_OFF_CPU_MIN:
		env.off_cpu_min_us = parse_long(arg, "--off-cpu-min", 0, 3600 * 1000000L, st);
		break;
	case OPT_PUSH:
		if (env.npush >= (int)(sizeof(env.push) / sizeof(env.push[0])))
			argp_error(st, "--push: at most %zu destinations",
				   sizeof(env.push) / sizeof(env.push[0]));
		env.push[env.npush++] = arg;
		break;
	case OPT_PUSH_HEADERS:
		env.push_headers = arg;
		break;
	case OPT_SERVICE_NAME:
		env.service_name = arg;
		break;
	case OPT_OFF_CPU_ENTRIES:
		env.off_cpu_entries =
		    (uint32_t)parse_long(arg, "--off-cpu-entries", 1, 1L << 24, st);
		break;
	case OPT_WINDOW:
		errno = 0;
		env.window_s = strtod(arg, &end);
		if (errno || end == arg || *end || !(env.window_s >= 1) || env.window_s > 86400)
			argp_error(st, "--window %s: expected seconds from 1 to 86400", arg);
		break;
	case OPT_RETAIN: {
		struct retain r;
		const char *why = "";

		if (cont_parse_retain(arg, &r, &why))
			argp_error(st, "--retain %s: %s", arg, why);
		env.retain_count = r.count;
		env.retain_age_s = r.age_s;
		env.retain_bytes = r.bytes;
		break;
	}
	case OPT_SPOOL_MAX:
		env.spool_max = parse_size(arg, "--spool-max", st);
		break;
	case OPT_INCLUDE_SELF:
		env.include_self = true;
		break;
	case OPT_NO_USER:
		env.no_user = true;
		break;
	case OPT_RINGBUF:
		env.ringbuf_mb = parse_long(arg, "--ringbuf-size", 1, 1024, st);
		if (env.ringbuf_mb & (env.ringbuf_mb - 1))
			argp_error(st, "--ringbuf-size %s: must be a power of 2", arg);
		break;
	case 'q':
		env.quiet = true;
		msg_set_verbosity(-1);
		break;
	case 'v':
		env.verbose++;
		if (!env.quiet)
			msg_set_verbosity(env.verbose);
		break;
	case ARGP_KEY_ARG:
		/* The first operand starts the command; argp stops at "--". */
		env.cmd = &st->argv[st->next - 1];
		st->next = st->argc;
		break;
	case ARGP_KEY_END:
		/* -p of its own pid would record its own work: left out, as
		 * under -a and when it descends from a target (record.c). */
		for (int k = 0; k < env.npids; k++)
			if (env.pids[k] == getpid() && !env.include_self) {
				if (env.npids == 1)
					argp_error(
					    st,
					    "-p %d is bpftrace-rec itself: nothing else to record",
					    env.pids[k]);
				info("-p %d is bpftrace-rec itself: left out, as under -a "
				     "(--include-self keeps it)",
				     env.pids[k]);
				env.pids[k--] = env.pids[--env.npids];
			}
		if (!!env.all + !!env.npids + !!env.cmd != 1)
			argp_error(st, "give exactly one target: -p PID, -a, or -- COMMAND");
		if (env.ntraces && env.all)
			argp_error(st,
				   "-t needs -p or -- COMMAND: it traces the target's functions");
		if (env.nusdts && env.all && !env.per_process)
			argp_error(st, "-t usdt: with -a needs -P: its intervals are in each "
				       "process's XRay files");
		if ((env.off_cpu_min_us || env.off_cpu_entries) && !env.off_cpu)
			argp_error(st, "--off-cpu-min and --off-cpu-entries need --off-cpu");
		if (env.heap_rate && !env.heap)
			argp_error(st, "--heap-rate needs --heap");
		if (env.heap && env.all && !env.per_process)
			argp_error(st, "--heap with -a needs -P: the allocations are followed per "
				       "process");
		if ((env.push_headers || env.service_name) && !env.npush)
			argp_error(st, "--push-headers and --service-name need --push");
		if ((env.retain_count || env.retain_age_s || env.retain_bytes) && !env.window_s)
			argp_error(st, "--retain needs --window: it rotates the windows");
		if (env.spool_max && !env.npush)
			argp_error(st, "--spool-max needs --push");
		/* A window is a profile of the interval: the XRay traces and the
		 * per-process files run from the start to the end. */
		if (env.window_s && (env.ntraces || env.nusdts || env.per_process))
			argp_error(st, "--window: not with -t or -P, whose traces and files cover "
				       "the whole recording");
		if (env.no_kernel && env.no_user)
			argp_error(st, "--no-kernel and --no-user leave nothing to record");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = {opts, parse_arg, args_doc, doc, NULL, NULL, NULL};
	int err;

	/* libdwfl would fetch debug info over the network for modules that
	 * have none here (Debian sets DEBUGINFOD_URLS in login shells): a root
	 * tool on a live box must not, unless asked with BPFTRACE_REC_DEBUGINFOD=1. */
	if (!getenv("BPFTRACE_REC_DEBUGINFOD"))
		unsetenv("DEBUGINFOD_URLS");
	/* A subcommand, as perf's: "bpftrace-rec -- report" still runs a
	 * command named report. */
	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	env.argc = argc;
	env.argv = argv;
	err = argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, NULL);
	if (err)
		return 1;
	/* Up front, with a shell's exit status: the exec happens only once
	 * the recording has started, too late to write nothing. */
	if (env.cmd && (err = target_check_cmd(env.cmd[0])))
		return err == -ENOENT ? 127 : 126;
	return record_run();
}
