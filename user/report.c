/* bpftrace-rec report: see report.h. */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/pprof_in.h"
#include "formats/report.h"
#include "user/report.h"
#include "user/target.h"
#include "user/util.h"

/* The largest profile read: compressed as on disk, and inflated (a gzip
 * bomb stops there, with its reason). A day of -a on a busy host writes
 * tens of MB. */
#define REPORT_GZ_MAX (1ULL << 30)
#define REPORT_PB_MAX (2ULL << 30)

struct report_args {
	const char *dir;
	struct report_opts o;
};

enum { OPT_SAMPLE_TYPE = 0x100, OPT_PID };

static const struct argp_option report_opts_def[] = {
    {"rows", 'n', "N", 0, "Functions in each top (default 20)", 0},
    {"sample-type", OPT_SAMPLE_TYPE, "TYPE", 0,
     "Only this sample type: cpu, offcpu, wall, samples, offcpu_waits", 0},
    {"pid", OPT_PID, "PID", 0, "Only this process's samples", 0},
    {0},
};

static const char report_doc[] =
    "Print the top functions of a recording, per sample type and per process, as pprof -top "
    "would.\v"
    "DIR is a recording's output directory (default ./bpftrace-rec.out), or a profile.pb.gz.\n";

static error_t report_parse(int key, char *arg, struct argp_state *st)
{
	struct report_args *a = st->input;
	char *end;
	long long v;

	switch (key) {
	case 'n':
		errno = 0;
		v = strtoll(arg, &end, 10);
		if (errno || end == arg || *end || v < 1 || v > 1000000)
			argp_error(st, "-n %s: expected a whole number from 1 to 1000000", arg);
		a->o.rows = (size_t)v;
		break;
	case OPT_SAMPLE_TYPE:
		a->o.sample_type = arg;
		break;
	case OPT_PID:
		errno = 0;
		v = strtoll(arg, &end, 10);
		if (errno || end == arg || *end || v < 0)
			argp_error(st, "--pid %s: expected a process id", arg);
		a->o.has_pid = true;
		a->o.pid = v;
		break;
	case ARGP_KEY_ARG:
		if (a->dir)
			argp_error(st, "one DIR at most (%s, then %s)", a->dir, arg);
		a->dir = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* What a failure to read the profile means, for its one line. */
static const char *why(int err)
{
	switch (err) {
	case -EBADMSG:
	case -EINVAL:
		return "not a pprof profile (neither gzip nor profile.proto)";
	case -EILSEQ:
		return "corrupt gzip data";
	case -ENODATA:
		return "truncated gzip (the file ends before its stream does)";
	case -EFBIG:
		return "too large: more than 1 GiB, or 2 GiB inflated";
	case -ENOTSUP:
		return "not a regular file";
	default:
		return strerror(-err);
	}
}

/* The file at path, whole, into *b. 0 or -errno. */
static int read_file(const char *path, struct fmt_buf *b)
{
	/* O_NONBLOCK: a FIFO planted in its place does not hang the open. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), err;
	struct stat st;
	char *buf = NULL;
	size_t len = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		err = -ENOTSUP;
	} else {
		err = read_fd_all(fd, REPORT_GZ_MAX, &buf, &len);
	}
	close(fd);
	if (!err) {
		b->p = (unsigned char *)buf;
		b->n = len;
		b->cap = len;
	}
	return err;
}

/* The profile's bytes as profile.proto: gunzipped into pb (a profile that
 * is not compressed, as pprof also reads them, is taken as it is), read
 * into in. 0, or -errno as why() reads it. */
static int load(const struct fmt_buf *raw, struct fmt_buf *pb, struct pprof_in *in)
{
	int err = pprof_in_gunzip(raw->p, raw->n, REPORT_PB_MAX, pb);

	if (err == -EBADMSG) {
		/* Not gzip: read it as it is, and name it not a profile if it
		 * is not one either. */
		if (pprof_in_read(raw->p, raw->n, in))
			return -EBADMSG;
		return 0;
	}
	if (err)
		return err;
	return pprof_in_read(pb->p, pb->n, in) ? -EINVAL : 0;
}

/* -t: where the traced calls are. The profile has the samples only; the
 * calls are in summary.json (traced_functions) and the XRay traces, which
 * llvm-xray reads. */
static void traced_calls(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *xray = NULL;
	bool any = false;

	if (!d)
		return;
	if (!target_resolve_cmd("llvm-xray", &xray))
		free(xray);
	else
		xray = NULL;
	while ((e = readdir(d))) {
		char pid[32];
		int n = 0;

		if (sscanf(e->d_name, "xray-trace-%30[0-9].fdr%n", pid, &n) != 1 || e->d_name[n])
			continue;
		if (!any) {
			printf("\n== traced calls (-t)\n"
			       "The calls of each traced function are counted in %s/summary.json "
			       "(traced_functions);\n"
			       "each call, with its latency, is in these XRay traces%s:\n",
			       dir,
			       xray ? ", read by llvm-xray"
				    : " (llvm-xray, of Debian's llvm, reads them)");
			any = true;
		}
		if (xray)
			printf("  llvm-xray account -m %s/xray-%s.map %s/%s\n", dir, pid, dir,
			       e->d_name);
		else
			printf("  %s/%s (its map: %s/xray-%s.map)\n", dir, e->d_name, dir, pid);
	}
	closedir(d);
}

int report_main(int argc, char **argv)
{
	static const struct argp argp = {
	    report_opts_def, report_parse, "[DIR]", report_doc, NULL, NULL, NULL};
	struct report_args a = {0};
	struct fmt_buf raw = {0}, pb = {0};
	struct pprof_in in = {0};
	char path[PATH_MAX], name[] = "bpftrace-rec report";
	struct stat st;
	bool is_dir;
	int err;

	argv[0] = name;
	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return 64;
	if (!a.dir)
		a.dir = "bpftrace-rec.out";
	if (stat(a.dir, &st)) {
		fprintf(stderr, "bpftrace-rec report: %s: %s\n", a.dir, strerror(errno));
		return 1;
	}
	is_dir = S_ISDIR(st.st_mode);
	if (is_dir)
		snprintf(path, sizeof(path), "%s/profile.pb.gz", a.dir);
	else
		snprintf(path, sizeof(path), "%s", a.dir);
	err = read_file(path, &raw);
	if (!err)
		err = load(&raw, &pb, &in);
	if (err == -ENOENT && is_dir) {
		fprintf(stderr,
			"bpftrace-rec report: %s: no profile.pb.gz (not a recording's directory)\n",
			a.dir);
		goto out;
	}
	if (err) {
		fprintf(stderr, "bpftrace-rec report: %s: %s\n", path, why(err));
		goto out;
	}
	a.o.source = path;
	if (!in.types.n) {
		err = -EINVAL;
		fprintf(stderr, "bpftrace-rec report: %s: a profile with no sample type\n", path);
		goto out;
	}
	if (a.o.sample_type && report_type_index(&in, a.o.sample_type) < 0) {
		size_t i;

		err = -ENOENT;
		fprintf(stderr, "bpftrace-rec report: %s: no sample type %s (it has:", path,
			a.o.sample_type);
		for (i = 0; i < in.types.n; i++) {
			char t[64];

			fmt_sanitize(t, sizeof(t), in.strings.v[in.types.v[i].type].p,
				     in.strings.v[in.types.v[i].type].n);
			fprintf(stderr, "%s %s", i ? "," : "", t);
		}
		fprintf(stderr, ")\n");
		goto out;
	}
	err = report_write(stdout, &in, &a.o);
	if (err == -ENOENT)
		fprintf(stderr, "bpftrace-rec report: %s: no samples of pid %" PRId64 "\n", path,
			a.o.pid);
	else if (err)
		fprintf(stderr, "bpftrace-rec report: %s: %s\n", path, strerror(-err));
	if (!err && is_dir)
		traced_calls(a.dir);
	if (!err && fflush(stdout)) {
		err = -errno;
		fprintf(stderr, "bpftrace-rec report: standard output: %s\n", strerror(errno));
	}
out:
	pprof_in_free(&in);
	free(raw.p);
	free(pb.p);
	return err ? 1 : 0;
}
