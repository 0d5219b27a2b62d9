/* A pprof profile.proto read in place (uncompressed: formats/pprof.c's,
 * the model every file of a run is written from): its tables as they are,
 * each index checked, for the encoders that turn it into what a receiver
 * takes (formats/otlp.c, formats/pyroscope.c) and for the report
 * (formats/report.c). Strings point into the bytes read, which must outlive
 * it. Plain C, no BPF. */
#ifndef FORMATS_PPROF_IN_H
#define FORMATS_PPROF_IN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "formats/protobuf.h"
#include "formats/util.h"

struct pstr {
	const char *p;
	size_t n;
};
struct plabel {
	uint64_t key, str, unit;
	int64_t num;
};
struct psample {
	size_t loc0, nlocs, val0, nvals, lab0, nlabs;
	int64_t pid;
	bool has_pid;
};
struct pmapping {
	uint64_t id, start, limit, offset, file, build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};
struct plocation {
	uint64_t id, mapping, address;
	size_t line0, nlines;
};
struct pline {
	uint64_t function;
	int64_t line;
};
struct pfunction {
	uint64_t id, name, system_name, filename;
};
struct pvtype {
	uint64_t type, unit;
};

struct pprof_in {
	VEC(struct pstr) strings;
	VEC(struct pvtype) types;
	VEC(struct psample) samples;
	VEC(uint64_t) locids;
	VEC(int64_t) values;
	VEC(struct plabel) labels;
	VEC(struct pmapping) mappings;
	VEC(struct plocation) locations;
	VEC(struct pline) lines;
	VEC(struct pfunction) functions;
	struct idtab map_ix, loc_ix, fn_ix; /* index by id */
	struct pvtype period_type;
	int64_t period, time_ns, duration_ns;
	uint64_t default_type; /* a string index; 0: none */
};

/* 0; -EINVAL when pb is not a well-formed profile (a string index out of
 * its table, an unknown id, a sample with another count of values than of
 * types), -ENOMEM. in (zeroed before) is to be freed either way. */
int pprof_in_read(const void *pb, size_t n, struct pprof_in *in);
void pprof_in_free(struct pprof_in *in);
/* profile.pb.gz as it is on disk: a gzip stream (one member or several, as
 * Go's reader takes them) inflated into out, appended. 0; -EBADMSG when gz
 * is not gzip (no magic); -EILSEQ when its data is corrupt (a bad header,
 * deflate data or checksum, bytes after the last member that are not one);
 * -ENODATA when the stream ends early (a truncated file); -EFBIG when it
 * would inflate past max bytes (a bomb); -ENOMEM. */
int pprof_in_gunzip(const void *gz, size_t n, size_t max, struct fmt_buf *out);
/* A ValueType message (type, unit: string indices, unchecked), as OTLP's
 * is too. 0 or -EINVAL. */
int pprof_in_vtype(const struct pb_field *f, struct pvtype *t);
/* The index of a mapping, location or function id in its table (checked
 * to be there by pprof_in_read for every id the profile uses). */
uint32_t pprof_in_mapping(const struct pprof_in *in, uint64_t id);
uint32_t pprof_in_location(const struct pprof_in *in, uint64_t id);
uint32_t pprof_in_function(const struct pprof_in *in, uint64_t id);
bool pprof_in_str_is(const struct pprof_in *in, uint64_t i, const char *s);
/* A sample's string label of this key, or "". */
struct pstr pprof_in_label(const struct pprof_in *in, const struct psample *s, const char *key);
/* The samples' indices, a process's together by pid (those without a pid
 * last), in the order read within a process: malloc'ed (one entry at
 * least), or NULL. */
size_t *pprof_in_by_pid(const struct pprof_in *in);

#endif
