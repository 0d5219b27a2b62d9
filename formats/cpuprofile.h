/* gperftools CPU profile (the "legacy" pprof format): writer and reader.
 * Layout per ../shared/specs/cpuprofile-fileformat.txt: header 0,3,0,period_us,0;
 * records count,npcs,pcs... (leaf first); trailer 0,1,0; then the text of
 * /proc/PID/maps. All slots are native-endian 64-bit words. */
#ifndef FORMATS_CPUPROFILE_H
#define FORMATS_CPUPROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cpuprof;

struct cpuprof *cpuprof_new(uint64_t period_us);
void cpuprof_free(struct cpuprof *c);

/* pcs[0] is the leaf; stored verbatim (readers subtract 1 from callers
 * themselves). Zero pcs are dropped (a 0 ends the data for google-pprof).
 * Identical stacks are merged. 0 or -ENOMEM. */
int cpuprof_add(struct cpuprof *c, const uint64_t *pcs, size_t npcs, uint64_t count);

/* Writes header, records, the zero-count records that stop readers from
 * dropping a frame shared by every stack ("Removing X from all stack
 * traces"), trailer, then maps_text (the mapping lines; may be NULL).
 * 0 or -errno. */
int cpuprof_write(const struct cpuprof *c, FILE *f, const char *maps_text);

/* Reader, for tests and tools: calls fn for every record, in file order.
 * Returns 0, or -EINVAL with *err set to a static reason. maps (optional)
 * receives a pointer into buf at the mapping text. */
struct cpuprof_header {
	uint64_t period_us;
};
typedef int (*cpuprof_record_fn)(void *ctx, uint64_t count, const uint64_t *pcs, size_t npcs);
int cpuprof_read(const void *buf, size_t len, struct cpuprof_header *hdr, cpuprof_record_fn fn,
		 void *ctx, const char **maps, const char **err);

#endif
