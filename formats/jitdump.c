#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "formats/util.h"
#include "formats/jitdump.h"

#define MAGIC	  0x4A695444u
#define HDR_SIZE  40
#define REC_HDR	  16
#define SCAN_BACK 256 /* symbols looked at below an address in a lookup */

struct rd {
	const unsigned char *p;
	size_t len;
	bool swap;
};

static uint32_t rd32(const struct rd *r, size_t off)
{
	uint32_t v;

	memcpy(&v, r->p + off, 4);
	return r->swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct rd *r, size_t off)
{
	uint64_t v;

	memcpy(&v, r->p + off, 8);
	return r->swap ? __builtin_bswap64(v) : v;
}

/* While parsing, strings and lines are offsets into growing arrays. */
struct psym {
	uint64_t start, size, t_start, t_end, index;
	size_t name, line0, nlines;
};

struct parser {
	struct jitdump *d;
	struct psym *syms;
	size_t nsyms, cap_syms, cap_strings, cap_lines;
	struct { /* the last DEBUG_INFO, for the LOAD that follows it */
		uint64_t code_addr;
		size_t line0, n;
		bool valid;
	} pending;
	struct { /* line file names: offsets until the end */
		size_t *v;
		size_t cap;
	} line_files;
	struct { /* code index -> the latest symbol of that index + 1 (0: empty) */
		uint64_t *keys;
		size_t *vals;
		size_t cap, n;
	} live;
};

static size_t index_slot(uint64_t key, size_t mask)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return key & mask;
}

/* The latest symbol loaded (or moved) with a code index: MOVEs find their
 * code in O(1), not by a scan of every symbol (quadratic in MOVEs of code
 * never loaded). */
static size_t *live_slot(struct parser *ps, uint64_t key)
{
	size_t mask = ps->live.cap - 1, i;

	for (i = index_slot(key, mask); ps->live.vals[i]; i = (i + 1) & mask)
		if (ps->live.keys[i] == key)
			return &ps->live.vals[i];
	return &ps->live.vals[i];
}

static int live_set(struct parser *ps, uint64_t key, size_t sym)
{
	size_t *v;

	if ((ps->live.n + 1) * 2 > ps->live.cap) {
		size_t cap = ps->live.cap ? ps->live.cap * 2 : 64, i, old = ps->live.cap;
		uint64_t *ok = ps->live.keys;
		size_t *ov = ps->live.vals;

		ps->live.keys = calloc(cap, sizeof(*ps->live.keys));
		ps->live.vals = calloc(cap, sizeof(*ps->live.vals));
		if (!ps->live.keys || !ps->live.vals) {
			free(ps->live.keys);
			free(ps->live.vals);
			ps->live.keys = ok;
			ps->live.vals = ov;
			return -ENOMEM;
		}
		ps->live.cap = cap;
		for (i = 0; i < old; i++)
			if (ov[i]) {
				v = live_slot(ps, ok[i]);
				ps->live.keys[v - ps->live.vals] = ok[i];
				*v = ov[i];
			}
		free(ok);
		free(ov);
	}
	v = live_slot(ps, key);
	if (!*v)
		ps->live.n++;
	ps->live.keys[v - ps->live.vals] = key;
	*v = sym + 1;
	return 0;
}

/* Copies a NUL-terminated string of at most max bytes (a missing NUL ends
 * it at max), sanitized (fmt_sanitize): names reach terminals and files. */
static int add_string(struct parser *ps, const unsigned char *s, size_t max, size_t *off,
		      size_t *used)
{
	struct jitdump *d = ps->d;
	size_t n = 0, clean;

	while (n < max && s[n])
		n++;
	clean = fmt_sanitize(NULL, 0, (const char *)s, n);
	if (fmt_grow((void **)&d->strings, &ps->cap_strings, d->strings_len + clean + 1, 1))
		return -ENOMEM;
	*off = d->strings_len;
	fmt_sanitize(d->strings + d->strings_len, clean + 1, (const char *)s, n);
	d->strings_len += clean + 1;
	if (clean != n)
		d->bad_names++;
	*used = n < max ? n + 1 : n;
	return 0;
}

static int add_sym(struct parser *ps, uint64_t start, uint64_t size, uint64_t t, uint64_t index,
		   size_t name, size_t line0, size_t nlines)
{
	struct psym s = {start, size, t, UINT64_MAX, index, name, line0, nlines};

	if (fmt_grow((void **)&ps->syms, &ps->cap_syms, ps->nsyms + 1, sizeof(s)) ||
	    live_set(ps, index, ps->nsyms))
		return -ENOMEM;
	ps->syms[ps->nsyms++] = s;
	return 0;
}

/* A line with its file name's offset, while sorting. */
struct pline {
	struct jit_line l;
	size_t file;
};

static int cmp_pline(const void *a, const void *b)
{
	const struct pline *x = a, *y = b;

	return x->l.addr < y->l.addr ? -1 : x->l.addr > y->l.addr;
}

/* Sorts the lines of a DEBUG_INFO by address, with their file names, when a
 * LOAD takes them: once, however many times the code moves later (moved
 * symbols share them). */
static int sort_lines(struct parser *ps, size_t line0, size_t n)
{
	struct pline *v;
	size_t i;

	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		v[i] = (struct pline){ps->d->lines[line0 + i], ps->line_files.v[line0 + i]};
	qsort(v, n, sizeof(*v), cmp_pline);
	for (i = 0; i < n; i++) {
		ps->d->lines[line0 + i] = v[i].l;
		ps->line_files.v[line0 + i] = v[i].file;
	}
	free(v);
	return 0;
}

static int parse_load(struct parser *ps, const struct rd *r, size_t off, size_t size, uint64_t t)
{
	uint64_t code_addr, code_size, index;
	size_t name, used, line0 = 0, nlines = 0;

	if (size < REC_HDR + 40)
		return 0;
	code_addr = rd64(r, off + REC_HDR + 16);
	code_size = rd64(r, off + REC_HDR + 24);
	index = rd64(r, off + REC_HDR + 32);
	if (add_string(ps, r->p + off + REC_HDR + 40, size - REC_HDR - 40, &name, &used))
		return -ENOMEM;
	if (ps->pending.valid && ps->pending.code_addr == code_addr) {
		line0 = ps->pending.line0;
		nlines = ps->pending.n;
		if (sort_lines(ps, line0, nlines))
			return -ENOMEM;
	}
	ps->pending.valid = false;
	return add_sym(ps, code_addr, code_size, t, index, name, line0, nlines);
}

static int parse_move(struct parser *ps, const struct rd *r, size_t off, size_t size, uint64_t t)
{
	uint64_t new_addr, code_size, index;
	struct psym *s;
	size_t i;

	if (size < REC_HDR + 48)
		return 0;
	new_addr = rd64(r, off + REC_HDR + 24);
	code_size = rd64(r, off + REC_HDR + 32);
	index = rd64(r, off + REC_HDR + 40);
	if (!ps->live.cap || !(i = *live_slot(ps, index)))
		return 0; /* a MOVE of code never loaded: nothing to move */
	s = &ps->syms[i - 1];
	if (s->t_end != UINT64_MAX)
		return 0;
	s->t_end = t;
	return add_sym(ps, new_addr, code_size, t, index, s->name, s->line0, s->nlines);
}

static int parse_debug(struct parser *ps, const struct rd *r, size_t off, size_t size)
{
	struct jitdump *d = ps->d;
	uint64_t code_addr, n, i;
	size_t p = off + REC_HDR + 16, end = off + size;

	if (size < REC_HDR + 16)
		return 0;
	code_addr = rd64(r, off + REC_HDR);
	n = rd64(r, off + REC_HDR + 8);
	ps->pending.code_addr = code_addr;
	ps->pending.line0 = d->nlines;
	ps->pending.n = 0;
	ps->pending.valid = true;
	/* n is untrusted: each entry takes at least 17 bytes of what is left. */
	for (i = 0; i < n && end - p >= 17; i++) {
		struct jit_line l;
		size_t name, used;

		l.addr = rd64(r, p);
		l.line = rd32(r, p + 8);
		l.discrim = rd32(r, p + 12);
		l.file = NULL;
		if (add_string(ps, r->p + p + 16, end - p - 16, &name, &used))
			return -ENOMEM;
		if (fmt_grow((void **)&d->lines, &ps->cap_lines, d->nlines + 1, sizeof(l)) ||
		    fmt_grow((void **)&ps->line_files.v, &ps->line_files.cap, d->nlines + 1,
			     sizeof(size_t)))
			return -ENOMEM;
		ps->line_files.v[d->nlines] = name;
		d->lines[d->nlines++] = l;
		ps->pending.n++;
		p += 16 + used;
	}
	return 0;
}

static int cmp_psym(const void *a, const void *b)
{
	const struct psym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->t_start < y->t_start ? -1 : x->t_start > y->t_start;
}

/* Minimum segment trees over the n symbol positions (sorted by start),
 * bottom-up: tree[n + p] is position p. */
static void seg_point_min(uint64_t *tree, size_t n, size_t p, uint64_t v)
{
	for (p += n; p >= 1; p >>= 1)
		if (v < tree[p])
			tree[p] = v;
}

static uint64_t seg_range_min(const uint64_t *tree, size_t n, size_t l, size_t r)
{
	uint64_t m = UINT64_MAX;

	for (l += n, r += n; l < r; l >>= 1, r >>= 1) {
		if (l & 1 && tree[l] < m)
			m = tree[l];
		if (l & 1)
			l++;
		if (r & 1 && tree[--r] < m)
			m = tree[r];
	}
	return m;
}

/* The point-query twin: a range update lowers the tags covering [l, r); a
 * position's value is the least tag on its way to the root. */
static void seg_cover_min(uint64_t *tree, size_t n, size_t l, size_t r, uint64_t v)
{
	for (l += n, r += n; l < r; l >>= 1, r >>= 1) {
		if (l & 1 && v < tree[l])
			tree[l] = v;
		if (l & 1)
			l++;
		if (r & 1 && v < tree[--r])
			tree[r] = v;
	}
}

static uint64_t seg_point_query(const uint64_t *tree, size_t n, size_t p)
{
	uint64_t m = UINT64_MAX;

	for (p += n; p >= 1; p >>= 1)
		if (tree[p] < m)
			m = tree[p];
	return m;
}

/* First position (of n, sorted by start) whose start is >= addr. */
static size_t first_at(const struct psym *s, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct psym *sort_syms;

static int cmp_by_time(const void *a, const void *b)
{
	uint64_t x = sort_syms[*(const size_t *)a].t_start,
		 y = sort_syms[*(const size_t *)b].t_start;

	return x < y ? -1 : x > y;
}

/* A LOAD over live code ends that code: a symbol ends at the first load of
 * overlapping code after its own (or at its MOVE, if earlier). Symbols are
 * taken latest first, a batch of equal times at a time: each asks the
 * symbols loaded after it, already in the trees, for the least load time
 * among those that start inside its range (one tree) or whose range holds
 * its start (the other), then joins them. O(n log n) however the loads
 * overlap (100k LOADs over one address took seconds when every pair was
 * compared). Size 0 counts as 1 byte, as in jitdump_lookup. */
static int end_overlaps(struct psym *s, size_t n)
{
	uint64_t *starts_in, *covering;
	size_t *ord, g, h, k;

	if (n < 2)
		return 0;
	starts_in = malloc(2 * n * sizeof(*starts_in));
	covering = malloc(2 * n * sizeof(*covering));
	ord = malloc(n * sizeof(*ord));
	if (!starts_in || !covering || !ord) {
		free(starts_in);
		free(covering);
		free(ord);
		return -ENOMEM;
	}
	memset(starts_in, 0xff, 2 * n * sizeof(*starts_in));
	memset(covering, 0xff, 2 * n * sizeof(*covering));
	for (k = 0; k < n; k++)
		ord[k] = k;
	sort_syms = s;
	qsort(ord, n, sizeof(*ord), cmp_by_time);
	for (h = n; h > 0; h = g) {
		for (g = h - 1; g > 0 && s[ord[g - 1]].t_start == s[ord[h - 1]].t_start; g--)
			;
		for (k = g; k < h; k++) {
			struct psym *x = &s[ord[k]];
			uint64_t len = x->size ? x->size : 1;
			uint64_t end = x->start + len < x->start ? UINT64_MAX : x->start + len;
			size_t lo = first_at(s, n, x->start), hi = first_at(s, n, end);
			uint64_t t = seg_range_min(starts_in, n, lo, hi);
			uint64_t c = seg_point_query(covering, n, ord[k]);

			if (c < t)
				t = c;
			if (t < x->t_end)
				x->t_end = t;
		}
		for (k = g; k < h; k++) {
			const struct psym *x = &s[ord[k]];
			uint64_t len = x->size ? x->size : 1;
			uint64_t end = x->start + len < x->start ? UINT64_MAX : x->start + len;

			seg_point_min(starts_in, n, ord[k], x->t_start);
			seg_cover_min(covering, n, first_at(s, n, x->start), first_at(s, n, end),
				      x->t_start);
		}
	}
	free(starts_in);
	free(covering);
	free(ord);
	return 0;
}

int jitdump_parse(const void *buf, size_t len, uint64_t (*conv)(void *ctx, uint64_t raw),
		  void *conv_ctx, struct jitdump *out, const char **err)
{
	struct rd r = {buf, len, false};
	struct parser ps = {.d = out};
	uint32_t magic, hdr_size;
	size_t off, i;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	*err = NULL;
	if (len < HDR_SIZE) {
		*err = "shorter than the jitdump header";
		return -EINVAL;
	}
	memcpy(&magic, buf, 4);
	if (magic == __builtin_bswap32(MAGIC)) {
		r.swap = true;
	} else if (magic != MAGIC) {
		*err = "not a jitdump file (bad magic)";
		return -EINVAL;
	}
	out->version = rd32(&r, 4);
	hdr_size = rd32(&r, 8);
	out->elf_mach = rd32(&r, 12);
	out->pid = rd32(&r, 20);
	out->timestamp = rd64(&r, 24);
	out->flags = rd64(&r, 32);
	if (out->version < 1 || out->version > 2) {
		*err = "unsupported jitdump version";
		return -EINVAL;
	}
	if (hdr_size < HDR_SIZE || hdr_size > len) {
		*err = "bad header size";
		return -EINVAL;
	}
	out->timed = !(out->flags & JITDUMP_FLAGS_ARCH_TIMESTAMP) || conv;
	for (off = hdr_size; off < len;) {
		uint32_t id, size;
		uint64_t t;

		if (len - off < REC_HDR) {
			out->truncated_bytes = len - off;
			break;
		}
		id = rd32(&r, off);
		size = rd32(&r, off + 4);
		t = rd64(&r, off + 8);
		if (size < REC_HDR || size > len - off) {
			/* The runtime is still writing this one (or it is garbage):
			 * either way nothing after it can be trusted. */
			out->truncated_bytes = len - off;
			break;
		}
		if ((out->flags & JITDUMP_FLAGS_ARCH_TIMESTAMP) && conv)
			t = conv(conv_ctx, t);
		if (id < 5)
			out->records[id]++;
		else
			out->unknown++;
		if (id == JIT_LOAD)
			ret = parse_load(&ps, &r, off, size, t);
		else if (id == JIT_MOVE)
			ret = parse_move(&ps, &r, off, size, t);
		else if (id == JIT_DEBUG_INFO)
			ret = parse_debug(&ps, &r, off, size);
		if (ret)
			goto fail;
		off += size; /* always by total_size: unknown records are skipped */
	}
	if (ps.nsyms) /* syms is NULL without a LOAD; qsort wants a pointer */
		qsort(ps.syms, ps.nsyms, sizeof(*ps.syms), cmp_psym);
	if (end_overlaps(ps.syms, ps.nsyms)) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < out->nlines; i++)
		out->lines[i].file = out->strings + ps.line_files.v[i];
	out->syms = calloc(ps.nsyms ? ps.nsyms : 1, sizeof(*out->syms));
	if (!out->syms) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < ps.nsyms; i++) {
		struct psym *s = &ps.syms[i];

		out->syms[i] = (struct jit_sym){
		    s->start, s->size, s->t_start, s->t_end, s->index, out->strings + s->name,
		    /* lines is NULL without DEBUG_INFO */
		    s->nlines ? out->lines + s->line0 : NULL, s->nlines};
	}
	out->nsyms = ps.nsyms;
	free(ps.syms);
	free(ps.line_files.v);
	free(ps.live.keys);
	free(ps.live.vals);
	return 0;
fail:
	free(ps.syms);
	free(ps.line_files.v);
	free(ps.live.keys);
	free(ps.live.vals);
	jitdump_free(out);
	return ret;
}

void jitdump_free(struct jitdump *d)
{
	free(d->syms);
	free(d->strings);
	free(d->lines);
	memset(d, 0, sizeof(*d));
}

const struct jit_sym *jitdump_lookup(const struct jitdump *d, uint64_t addr, uint64_t t)
{
	const struct jit_sym *best = NULL;
	uint64_t best_dist = UINT64_MAX;
	size_t lo = 0, hi = d->nsyms, i, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, k = 0; i-- > 0 && k < SCAN_BACK; k++) {
		const struct jit_sym *s = &d->syms[i];
		uint64_t dist;

		if (addr - s->start >= (s->size ? s->size : 1))
			continue;
		if (!d->timed)
			dist = UINT64_MAX - s->t_start; /* the latest load */
		else if (t < s->t_start)
			dist = s->t_start - t;
		else if (t >= s->t_end)
			dist = t - s->t_end + 1;
		else
			dist = 0;
		if (dist < best_dist || (dist == best_dist && best && s->t_start > best->t_start)) {
			best = s;
			best_dist = dist;
		}
	}
	return best;
}

const struct jit_line *jitdump_line(const struct jit_sym *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nlines;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->lines[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &s->lines[lo - 1] : (s->nlines ? &s->lines[0] : NULL);
}

static void put32(FILE *f, uint32_t v)
{
	fwrite(&v, 4, 1, f);
}

static void put64(FILE *f, uint64_t v)
{
	fwrite(&v, 8, 1, f);
}

static void rec_hdr(FILE *f, uint32_t id, size_t size, uint64_t ts)
{
	put32(f, id);
	put32(f, (uint32_t)size);
	put64(f, ts);
}

void jitdump_write_header(FILE *f, uint32_t pid, uint64_t timestamp, uint64_t flags)
{
	put32(f, MAGIC);
	put32(f, 1);
	put32(f, HDR_SIZE);
	put32(f, 62); /* EM_X86_64 */
	put32(f, 0);
	put32(f, pid);
	put64(f, timestamp);
	put64(f, flags);
}

void jitdump_write_load(FILE *f, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t size, uint64_t index, const char *name)
{
	size_t n = strlen(name) + 1;

	rec_hdr(f, JIT_LOAD, REC_HDR + 40 + n, ts);
	put32(f, pid);
	put32(f, tid);
	put64(f, addr);
	put64(f, addr);
	put64(f, size);
	put64(f, index);
	fwrite(name, 1, n, f); /* no code bytes: the format allows it */
}

void jitdump_write_move(FILE *f, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t old_addr,
			uint64_t new_addr, uint64_t size, uint64_t index)
{
	rec_hdr(f, JIT_MOVE, REC_HDR + 48, ts);
	put32(f, pid);
	put32(f, tid);
	put64(f, new_addr);
	put64(f, old_addr);
	put64(f, new_addr);
	put64(f, size);
	put64(f, index);
}

void jitdump_write_debug(FILE *f, uint64_t ts, uint64_t code_addr, const struct jit_line *l,
			 size_t n)
{
	size_t size = REC_HDR + 16, i;

	for (i = 0; i < n; i++)
		size += 16 + strlen(l[i].file) + 1;
	rec_hdr(f, JIT_DEBUG_INFO, size, ts);
	put64(f, code_addr);
	put64(f, n);
	for (i = 0; i < n; i++) {
		put64(f, l[i].addr);
		put32(f, l[i].line);
		put32(f, l[i].discrim);
		fwrite(l[i].file, 1, strlen(l[i].file) + 1, f);
	}
}

void jitdump_write_close(FILE *f, uint64_t ts)
{
	rec_hdr(f, JIT_CLOSE, REC_HDR, ts);
}
