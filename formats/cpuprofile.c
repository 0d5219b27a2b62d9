/* gperftools CPU profile writer and reader (../shared/specs/cpuprofile-fileformat.txt). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "formats/util.h"
#include "formats/cpuprofile.h"

struct rec {
	size_t off; /* into pcs */
	size_t n;
	uint64_t count;
	uint64_t hash;
};

struct cpuprof {
	uint64_t period_us;
	uint64_t *pcs;
	size_t npcs, cap_pcs;
	struct rec *recs;
	size_t nrecs, cap_recs;
	size_t *slots; /* open addressing: record index + 1 */
	size_t cap_slots;
};

struct cpuprof *cpuprof_new(uint64_t period_us)
{
	struct cpuprof *c = calloc(1, sizeof(*c));

	if (c)
		c->period_us = period_us;
	return c;
}

void cpuprof_free(struct cpuprof *c)
{
	if (!c)
		return;
	free(c->pcs);
	free(c->recs);
	free(c->slots);
	free(c);
}

static uint64_t hash_pcs(const uint64_t *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
	}
	return h;
}

static int rehash(struct cpuprof *c)
{
	size_t cap = c->cap_slots ? c->cap_slots * 2 : 1024, i, j;
	size_t *s = calloc(cap, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < c->nrecs; i++) {
		for (j = c->recs[i].hash & (cap - 1); s[j]; j = (j + 1) & (cap - 1))
			;
		s[j] = i + 1;
	}
	free(c->slots);
	c->slots = s;
	c->cap_slots = cap;
	return 0;
}

int cpuprof_add(struct cpuprof *c, const uint64_t *pcs, size_t npcs, uint64_t count)
{
	uint64_t *buf, h;
	size_t i, n = 0, j;

	/* Whole at any depth (a stack cut at --max-stack must keep its root,
	 * [truncated]): copied past the stored ones, where it stays if new. */
	if (fmt_grow((void **)&c->pcs, &c->cap_pcs, c->npcs + npcs, sizeof(*c->pcs)))
		return -ENOMEM;
	buf = &c->pcs[c->npcs];
	/* A zero pc ends the data for google-pprof: drop them. */
	for (i = 0; i < npcs; i++)
		if (pcs[i])
			buf[n++] = pcs[i];
	if (!n)
		return 0;
	h = hash_pcs(buf, n);
	if ((c->nrecs + 1) * 2 > c->cap_slots && rehash(c))
		return -ENOMEM;
	for (j = h & (c->cap_slots - 1); c->slots[j]; j = (j + 1) & (c->cap_slots - 1)) {
		struct rec *r = &c->recs[c->slots[j] - 1];

		if (r->hash == h && r->n == n && !memcmp(&c->pcs[r->off], buf, n * sizeof(*buf))) {
			r->count += count;
			return 0;
		}
	}
	if (fmt_grow((void **)&c->recs, &c->cap_recs, c->nrecs + 1, sizeof(*c->recs)))
		return -ENOMEM;
	c->recs[c->nrecs] = (struct rec){c->npcs, n, count, h};
	c->npcs += n;
	c->slots[j] = ++c->nrecs;
	return 0;
}

static int put(FILE *f, const uint64_t *w, size_t n)
{
	return fwrite(w, sizeof(*w), n, f) == n ? 0 : -EIO;
}

int cpuprof_write(const struct cpuprof *c, FILE *f, const char *maps_text)
{
	uint64_t hdr[5] = {0, 3, 0, c->period_us, 0}, trailer[3] = {0, 1, 0};
	size_t i, pad, done = 0;
	int err = put(f, hdr, 5);

	for (i = 0; !err && i < c->nrecs; i++) {
		uint64_t rh[2] = {c->recs[i].count, c->recs[i].n};

		err = put(f, rh, 2);
		if (!err)
			err = put(f, &c->pcs[c->recs[i].off], c->recs[i].n);
	}
	/* When nearly every record shares pc[1], the readers delete that frame
	 * from all stacks ("Removing main from all stack traces"). Zero-count
	 * one-frame records break the pattern at no cost in samples:
	 * floor(nrecords / 31) + 1 of them were enough with both readers. */
	pad = c->nrecs / 31 + 1;
	for (i = 0; !err && i < c->nrecs && done < pad; i++) {
		uint64_t r[3] = {0, 1, c->pcs[c->recs[i].off]};

		err = put(f, r, 3);
		done++;
	}
	if (!err)
		err = put(f, trailer, 3);
	if (!err && maps_text && fputs(maps_text, f) == EOF)
		err = -EIO;
	return err;
}

int cpuprof_read(const void *buf, size_t len, struct cpuprof_header *hdr, cpuprof_record_fn fn,
		 void *ctx, const char **maps, const char **err)
{
	const uint64_t *w = buf;
	size_t n = len / sizeof(uint64_t), i = 5;
	uint64_t first[5];

	*err = NULL;
	if (n < 5) {
		*err = "shorter than the header";
		return -EINVAL;
	}
	memcpy(first, buf, sizeof(first));
	if (first[0] != 0 || first[1] < 3 || first[2] != 0 || first[3] == 0) {
		*err = "bad header";
		return -EINVAL;
	}
	i = 2 + first[1];
	if (i > n) {
		*err = "header longer than the file";
		return -EINVAL;
	}
	if (hdr)
		hdr->period_us = first[3];
	for (;;) {
		uint64_t count, npcs, pcs[1];

		if (n - i < 3) {
			*err = "no trailer";
			return -EINVAL;
		}
		memcpy(&count, &w[i], 8);
		memcpy(&npcs, &w[i + 1], 8);
		memcpy(pcs, &w[i + 2], 8);
		if (count == 0 && npcs == 1 && pcs[0] == 0) {
			i += 3;
			break;
		}
		if (npcs > n - i - 2) {
			*err = "record longer than the file";
			return -EINVAL;
		}
		if (fn) {
			int r = fn(ctx, count, &w[i + 2], npcs);

			if (r)
				return r;
		}
		i += 2 + npcs;
	}
	if (maps)
		*maps = (const char *)buf + i * sizeof(uint64_t);
	return 0;
}
