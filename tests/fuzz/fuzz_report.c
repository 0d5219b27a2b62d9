/* libFuzzer target: bpftrace-rec report's input, formats/pprof_in.c's
 * gunzip and reader, and the report of what they vouched for
 * (formats/report.c). The input is read as profile.pb.gz (gzip, inflated
 * to at most 16 MiB), else as an uncompressed profile, as the report reads
 * a file; a profile read is reported whole, by process, and for its first
 * pid and each of its types. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "formats/pprof_in.h"
#include "formats/report.h"

static FILE *sink(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_buf pb = {0};
	struct pprof_in in = {0};
	struct report_opts o = {.rows = 5, .procs = 2, .source = "fuzz"};
	int err = pprof_in_gunzip(data, size, 16 << 20, &pb);
	size_t i;

	if (!err)
		err = pprof_in_read(pb.p, pb.n, &in);
	else if (err == -EBADMSG)
		err = pprof_in_read(data, size, &in);
	if (!err && sink()) {
		report_write(sink(), &in, &o);
		for (i = 0; i < in.samples.n; i++)
			if (in.samples.v[i].has_pid) {
				o.has_pid = true;
				o.pid = in.samples.v[i].pid;
				report_write(sink(), &in, &o);
				o.has_pid = false;
				break;
			}
		for (i = 0; i < in.types.n && i < 8; i++) {
			char name[64];

			fmt_sanitize(name, sizeof(name), in.strings.v[in.types.v[i].type].p,
				     in.strings.v[in.types.v[i].type].n);
			o.sample_type = name;
			report_write(sink(), &in, &o);
			o.sample_type = NULL;
		}
	}
	pprof_in_free(&in);
	free(pb.p);
	return 0;
}
