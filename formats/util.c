#include <stdbool.h>
#include <stdio.h>
#include "formats/util.h"

/* Length of the valid UTF-8 sequence at s[0..n) (no overlongs, surrogates or
 * code points above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t k, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		k = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4, cp = c & 0x07;
	else
		return 0;
	if (k > n)
		return 0;
	for (i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (k == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return k;
}

size_t fmt_sanitize(char *dst, size_t cap, const char *src, size_t n)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t out = 0, wr = 0, i = 0, k;
	bool room = cap > 0;

	while (i < n && s[i]) {
		char esc[5];
		const char *w = (const char *)s + i;

		k = utf8_len(s + i, n - i);
		/* C0 controls, DEL, and C1 controls (U+0080-U+009F, which some
		 * terminals obey as escapes) are not text either. */
		if ((k == 1 && (s[i] < 0x20 || s[i] == 0x7f)) ||
		    (k == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0))
			k = 0;
		if (!k) {
			snprintf(esc, sizeof(esc), "\\x%02x", s[i]);
			w = esc;
		}
		i += k ? k : 1;
		k = k ? k : 4;
		/* Never half an escape or half a character: stop writing instead. */
		if (room && wr + k < cap) {
			memcpy(dst + wr, w, k);
			wr += k;
		} else {
			room = false;
		}
		out += k;
	}
	if (cap)
		dst[wr] = 0;
	return out;
}

char *fmt_sanitize_dup(const char *s, size_t n)
{
	size_t len = fmt_sanitize(NULL, 0, s, n);
	char *d = malloc(len + 1);

	if (d)
		fmt_sanitize(d, len + 1, s, n);
	return d;
}

uint32_t idtab_find(const struct idtab *t, uint64_t hash, idtab_eq_fn eq, const void *ctx,
		    const void *key)
{
	uint64_t tag = hash >> 32;
	size_t mask, i;

	if (!t->cap)
		return UINT32_MAX;
	mask = t->cap - 1;
	for (i = hash_u64(tag) & mask;; i = (i + 1) & mask) {
		uint64_t s = t->slots[i];

		if (!s)
			return UINT32_MAX;
		if ((s >> 32) == tag && eq(ctx, (uint32_t)s - 1, key))
			return (uint32_t)s - 1;
	}
}

static void idtab_put(uint64_t *slots, size_t cap, uint64_t hash, uint64_t slot)
{
	size_t i, mask = cap - 1;

	for (i = hash & mask; slots[i]; i = (i + 1) & mask)
		;
	slots[i] = slot;
}

int idtab_insert(struct idtab *t, uint64_t hash, uint32_t id)
{
	if ((t->n + 1) * 4 > t->cap * 3) {
		/* Slots keep only the hash's high half (the tag), so positions
		 * are derived from the tag alone, before and after growing. */
		size_t ncap = t->cap ? t->cap * 2 : 64, i;
		uint64_t *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (i = 0; i < t->cap; i++)
			if (t->slots[i])
				idtab_put(ns, ncap, hash_u64(t->slots[i] >> 32), t->slots[i]);
		free(t->slots);
		t->slots = ns;
		t->cap = ncap;
	}
	idtab_put(t->slots, t->cap, hash_u64(hash >> 32), (hash >> 32) << 32 | ((uint64_t)id + 1));
	t->n++;
	return 0;
}

void idtab_clear(struct idtab *t)
{
	if (t->cap > 4096) {
		idtab_free(t);
		return;
	}
	if (t->cap)
		memset(t->slots, 0, t->cap * sizeof(*t->slots));
	t->n = 0;
}

void idtab_free(struct idtab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->n = 0;
}

uint64_t hash_bytes(const void *p, size_t n)
{
	/* FNV-1a, then a final mix for the table's low bits. */
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *s++) * 0x100000001b3ULL;
	return hash_u64(h);
}
