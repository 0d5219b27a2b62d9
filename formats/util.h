/* Small helpers shared by the format readers and writers. */
#ifndef FORMATS_UTIL_H
#define FORMATS_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Grows *p (of *cap elements of sz bytes) to hold want, doubling, with
 * overflow checked. 0 or -ENOMEM. */
static inline int fmt_grow(void **p, size_t *cap, size_t want, size_t sz)
{
	size_t c = *cap ? *cap : 16;
	void *np;

	if (want <= *cap)
		return 0;
	while (c < want) {
		if (c > SIZE_MAX / 2 / sz)
			return -ENOMEM;
		c *= 2;
	}
	np = realloc(*p, c * sz);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}

/* Gives back an array's growth room: realloc to a smaller size keeps the
 * data, and where it fails the room simply stays. */
static inline void fmt_shrink(void **p, size_t *cap, size_t n, size_t sz)
{
	void *np;

	if (n && n < *cap && (np = realloc(*p, n * sz))) {
		*p = np;
		*cap = n;
	}
}

/* The growable array of the whole tree: VEC(T) v = {0}; VEC_PUSH(v, x)
 * returns 0 or -ENOMEM. A named one: struct foos { VEC_BODY(struct foo) }; */
#define VEC_BODY(T)                                                                                \
	T *v;                                                                                      \
	size_t n, cap;
#define VEC(T)                                                                                     \
	struct {                                                                                   \
		VEC_BODY(T)                                                                        \
	}
#define VEC_RESERVE(a, want) fmt_grow((void **)&(a).v, &(a).cap, (want), sizeof(*(a).v))
#define VEC_PUSH(a, x)	     (VEC_RESERVE(a, (a).n + 1) ? -ENOMEM : ((a).v[(a).n++] = (x), 0))
#define VEC_SHRINK(a)	     fmt_shrink((void **)&(a).v, &(a).cap, (a).n, sizeof(*(a).v))
#define VEC_FREE(a)                                                                                \
	do {                                                                                       \
		free((a).v);                                                                       \
		(a).v = NULL;                                                                      \
		(a).n = (a).cap = 0;                                                               \
	} while (0)

/* The hash table of the whole tree: open addressing of 32-bit ids keyed by
 * a caller-computed 64-bit hash; the caller owns the objects (most often a
 * VEC, the id their index) and says whether id matches its key. */
struct idtab {
	uint64_t *slots; /* hash high bits << 32 | (id + 1); 0: empty */
	size_t cap, n;
};
typedef bool (*idtab_eq_fn)(const void *ctx, uint32_t id, const void *key);
/* Returns the id or UINT32_MAX when absent. */
uint32_t idtab_find(const struct idtab *t, uint64_t hash, idtab_eq_fn eq, const void *ctx,
		    const void *key);
/* Inserts an id that idtab_find just did not find. 0 or -ENOMEM. */
int idtab_insert(struct idtab *t, uint64_t hash, uint32_t id);
/* Empties it for reuse: a small table is kept, a large one given back
 * rather than cleared slot by slot each time. */
void idtab_clear(struct idtab *t);
void idtab_free(struct idtab *t);

uint64_t hash_bytes(const void *p, size_t n);
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* A growable byte buffer for encoders; a failed growth sticks in err and
 * later writes are dropped, so an encoder checks once at the end. */
struct fmt_buf {
	unsigned char *p;
	size_t n, cap;
	int err;
};

static inline void fmt_put(struct fmt_buf *b, const void *d, size_t n)
{
	/* An empty nested message comes as (NULL, 0): memcpy's NULL is UB. */
	if (b->err || !n)
		return;
	if (fmt_grow((void **)&b->p, &b->cap, b->n + n, 1)) {
		b->err = -ENOMEM;
		return;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

/* Unsigned LEB128: protobuf's varint and DWARF's ULEB128 alike. */
static inline void fmt_put_uleb(struct fmt_buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	fmt_put(b, tmp, n);
}

/* Up to 16 hex digits from p (before end) into *v; returns the first
 * character after them, or NULL when there is none. */
static inline const char *fmt_hex(const char *p, const char *end, uint64_t *v)
{
	const char *s = p;

	*v = 0;
	for (; p < end && p - s < 16; p++) {
		int c = *p, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		*v = *v << 4 | d;
	}
	return p > s ? p : NULL;
}

/* Names from outside (JIT files, comm, ELF symbols, paths, kallsyms) as
 * text that is safe in every file and on a terminal: valid UTF-8 with no
 * control character. The one sanitizer: src[0..n), up to a NUL, with C0 and
 * C1 controls, DEL and bytes that are not valid UTF-8 written as "\xNN"
 * (backslashes are kept as they are, so the result sanitizes to itself).
 * Writes at most cap - 1 bytes to dst, never part of an escape or of a
 * character, NUL-terminated when cap > 0 (dst may be NULL with cap 0).
 * Returns the length of the whole result, as snprintf: a result as long as
 * the input means the input was clean. */
size_t fmt_sanitize(char *dst, size_t cap, const char *src, size_t n);
/* The same into a malloc'd string; NULL on ENOMEM. */
char *fmt_sanitize_dup(const char *src, size_t n);

#endif
