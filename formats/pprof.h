/* pprof profile.proto writer: builds a profile in memory (strings, mappings,
 * functions and locations deduplicated; identical samples merged) and writes
 * it gzip-compressed. Plain C, no BPF: see tests/unit/test_pprof.c. */
#ifndef FORMATS_PPROF_H
#define FORMATS_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pprof;

/* One frame of a location; several for inlined code, innermost first. */
struct pprof_line {
	const char *function;	 /* display name; NULL: none */
	const char *system_name; /* mangled name; NULL: same as function */
	const char *filename;	 /* NULL: unknown */
	int64_t line;		 /* 0: unknown */
	int64_t start_line;	 /* the function's first line; 0: unknown */
};

/* A sample label: a string (str != NULL) or a number with an optional unit. */
struct pprof_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

/* sample_type is [samples/count, cpu/nanoseconds]; period_type cpu/nanoseconds. */
struct pprof *pprof_new(int64_t period_ns, int64_t time_nanos, int64_t duration_nanos);
void pprof_free(struct pprof *p);

/* Off-CPU time: the sample types become [samples/count, cpu/nanoseconds,
 * offcpu/nanoseconds, offcpu_waits/count, wall/nanoseconds] (wall: cpu +
 * offcpu), with cpu the default type (default_sample_type): pprof's
 * -sample_index=offcpu or =wall picks the others. Before any sample. */
void pprof_enable_offcpu(struct pprof *p);
/* Adds off-CPU time (ns over count waits) to the sample of these locations
 * and labels, merged as pprof_add_sample's. 0, -ENOMEM, or -EINVAL when
 * pprof_enable_offcpu was not called. */
int pprof_add_offcpu(struct pprof *p, const uint64_t *locs, size_t nlocs, int64_t ns, int64_t count,
		     const struct pprof_label *labels, size_t nlabels);

/* A heap profile, as Go's: the sample types become [alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes], inuse_space
 * the default, and the period type space/bytes with period rate (the
 * sampling's mean bytes). Before any sample; pprof_add_sample and
 * pprof_add_offcpu then fail with -EINVAL. */
void pprof_enable_heap(struct pprof *p, int64_t rate);
/* Adds v (the four values, unsampled) to the sample of these locations and
 * labels, merged as pprof_add_sample's. 0, -ENOMEM, or -EINVAL without
 * pprof_enable_heap. */
int pprof_add_heap(struct pprof *p, const uint64_t *locs, size_t nlocs, const int64_t v[4],
		   const struct pprof_label *labels, size_t nlabels);
/* A line of the profile's comments (pprof -comments shows them). 0 or
 * -ENOMEM. */
int pprof_add_comment(struct pprof *p, const char *text);

/* Returns the mapping id (>= 1), or 0 on allocation failure. Identical
 * (start, limit, offset, file) mappings get the same id. has_functions tells
 * pprof the names are final and it must not re-symbolize. */
uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
		       const char *file, const char *build_id, bool has_functions);

/* Returns the location id (>= 1), or 0 on failure. Locations are deduplicated
 * by (mapping_id, address, function of the first line), so JIT code that
 * reused an address keeps both names. mapping_id 0 means
 * none. The address is stored exactly as given (callers pass return address - 1). */
uint64_t pprof_location(struct pprof *p, uint64_t mapping_id, uint64_t address,
			const struct pprof_line *lines, size_t nlines);

/* locs[0] is the leaf. Values are [count, count * period]. Samples with the same
 * locations and labels are merged. Returns 0, or -ENOMEM. */
int pprof_add_sample(struct pprof *p, const uint64_t *locs, size_t nlocs, int64_t count,
		     const struct pprof_label *labels, size_t nlabels);

/* The first mapping written: pprof shows it as the profile's program
 * ("File:"). A kept mapping (not a scope's). 0 or -EINVAL. */
int pprof_set_main_mapping(struct pprof *p, uint64_t mapping_id);
void pprof_set_duration(struct pprof *p, int64_t duration_nanos);

/* Scopes, for a profile of a long run that must not hold every process to
 * the end. Between pprof_scope_begin and pprof_scope_end, new mappings, the
 * locations in them or in no mapping, and every sample belong to the scope:
 * at its end they are encoded to the spill file (pprof_spill_to: an empty
 * file open for reading and writing, the caller's to close after
 * pprof_write_fd) and forgotten. Strings, functions and the locations of
 * mappings made outside scopes (the kernel's) are kept and shared. A scope
 * mapping or location id is only valid within its scope. Without a spill
 * file, or once writing it failed, scopes stay in memory as if there were
 * none. pprof_scope_end: 0, or -errno when the spill file could not be
 * written (nothing is lost: the scope stays in memory). */
void pprof_spill_to(struct pprof *p, int fd);
void pprof_scope_begin(struct pprof *p);
int pprof_scope_end(struct pprof *p);

/* Serialize and gzip to an open file descriptor / a path. 0 or -errno. */
int pprof_write_fd(struct pprof *p, int fd);

/* Number of distinct samples so far (after merging), for summaries and tests. */
size_t pprof_nsamples(const struct pprof *p);

#endif
