/* OTLP profiles: the ExportProfilesServiceRequest of opentelemetry-proto's
 * profiles/v1development, as the OpenTelemetry Collector v0.165.0's
 * otlpreceiver takes it at /v1development/profiles (protobuf). Made from a
 * pprof profile.proto (formats/pprof.c's, uncompressed: the model every
 * file of a run is written from), with resource and sample attributes per
 * OpenTelemetry's semantic conventions. Its decoder reads one back, for the
 * unit test and the fuzzer, and the receiver's answers for the push. Plain
 * C, no BPF: see tests/unit/test_otlp.c and tests/fuzz/fuzz_otlp.c. */
#ifndef FORMATS_OTLP_H
#define FORMATS_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "formats/util.h"

/* What a process's resource says beyond its pid. */
struct otlp_process {
	int64_t pid;
	const char *exe_path;	  /* process.executable.path/name; NULL: unknown */
	const char *container_id; /* container.id; NULL: none */
};

/* The process of this pid in v[0..n), or NULL. */
const struct otlp_process *otlp_process_find(const struct otlp_process *v, size_t n, int64_t pid);

struct otlp_meta {
	const char *host_name;	  /* host.name; NULL: left out */
	const char *service_name; /* service.name; NULL: each process's executable name */
	const char *scope_version;
	const struct otlp_process *procs; /* by pid; those not here get what the samples say */
	size_t nprocs;
};

struct otlp_stats {
	size_t resources, profiles, samples;
	int64_t values[8]; /* the sum of each pprof sample type's values, as sent */
	size_t ntypes;
};

/* The request for a pprof Profile message (n bytes at pb): a resource per
 * process (the samples' "pid" label), with host.name, service.name,
 * process.pid, process.executable.name and .path, container.id; a profile
 * per pprof sample type, holding the samples whose value of that type is
 * not 0, with thread.id, thread.name and cpu.logical_number from the tid,
 * comm and cpu labels (others keep their key). Appended to out. 0, -EINVAL
 * when pb is not a well-formed pprof profile, or -ENOMEM. */
int otlp_from_pprof(const void *pb, size_t n, const struct otlp_meta *m, struct fmt_buf *out,
		    struct otlp_stats *st);

/* The decoded request. Strings are NUL-terminated copies; every index in it
 * was checked to be within its table, so readers index without checks. */
struct otlp_value {
	bool is_str;
	char *str; /* is_str */
	int64_t num;
};
struct otlp_kv {
	char *key;
	struct otlp_value v;
};
struct otlp_attr {
	int32_t key, unit; /* string indices */
	struct otlp_value v;
};
struct otlp_line {
	int32_t function;
	int64_t line;
};
struct otlp_location {
	int32_t mapping;
	uint64_t address;
	VEC(struct otlp_line) lines;
	VEC(int32_t) attrs;
};
struct otlp_function {
	int32_t name, system_name, filename;
};
struct otlp_mapping {
	uint64_t start, limit, offset;
	int32_t filename;
	VEC(int32_t) attrs;
};
struct otlp_stack {
	VEC(int32_t) locs; /* leaf first */
};
struct otlp_sample {
	int32_t stack;
	VEC(int32_t) attrs;
	VEC(int64_t) values;
};
struct otlp_profile {
	int32_t type, unit, period_type, period_unit;
	int64_t period;
	uint64_t time_ns, duration_ns;
	VEC(struct otlp_sample) samples;
};
struct otlp_resource {
	VEC(struct otlp_kv) attrs;
	char *scope_name, *scope_version;
	VEC(struct otlp_profile) profiles;
};
struct otlp_request {
	VEC(char *) strings;
	VEC(struct otlp_mapping) mappings;
	VEC(struct otlp_location) locations;
	VEC(struct otlp_function) functions;
	VEC(struct otlp_stack) stacks;
	VEC(struct otlp_attr) attrs;
	VEC(struct otlp_resource) resources;
};

/* 0; -EINVAL when malformed or an index is out of its table (what is
 * wrong in why, when why is not NULL); -ENOMEM. req is to be freed either way. */
int otlp_decode(const void *p, size_t n, struct otlp_request *req, const char **why);
void otlp_request_free(struct otlp_request *req);
/* A resource attribute by key, or NULL. */
const struct otlp_value *otlp_resource_attr(const struct otlp_resource *r, const char *key);

/* The receiver's answers. ExportProfilesServiceResponse: its partial
 * success (rejected profiles, message). google.rpc.Status, the body of an
 * error answer: its message. Messages are sanitized (fmt_sanitize) into
 * msg (cap bytes). 0 or -EINVAL. */
int otlp_decode_response(const void *p, size_t n, int64_t *rejected, char *msg, size_t cap);
int otlp_decode_status(const void *p, size_t n, char *msg, size_t cap);

/* container.id from /proc/PID/cgroup's text: the last run of 64 hex digits
 * in its paths that stands alone or after a runtime's prefix (docker-,
 * cri-containerd-, crio-, libpod-), as Docker, containerd, CRI-O and Podman
 * name their cgroups. true and the id in out, or false. */
bool otlp_container_id(const char *cgroup, size_t n, char out[65]);

#endif
