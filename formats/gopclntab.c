#include <errno.h>
#include <string.h>
#include "formats/gopclntab.h"

#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u
#define HDR_LEN	  (8 + 8 * 8) /* magic, pads, minLC, ptrSize, then 8 words */
#define MAX_STEPS (1u << 20)  /* a table that loops ends there */

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A uint32 at off + 4 * i of the table, or 0 with *ok cleared. */
static uint32_t at32(const struct gopcln *g, uint64_t off, uint64_t i, int *ok)
{
	if (off > g->len || i > (g->len - off) / 4 || (g->len - off) / 4 - i < 1) {
		*ok = 0;
		return 0;
	}
	return rd32(g->p + off + 4 * i);
}

/* A NUL-terminated string at off, or NULL. */
static const char *str_at(const struct gopcln *g, uint64_t off)
{
	if (off >= g->len || !memchr(g->p + off, 0, g->len - off))
		return NULL;
	return (const char *)g->p + off;
}

int gopcln_open(struct gopcln *g, const uint8_t *p, size_t len, uint64_t text)
{
	uint32_t magic;
	uint64_t w[8];
	int i;

	memset(g, 0, sizeof(*g));
	if (len < HDR_LEN)
		return -EINVAL;
	magic = rd32(p);
	if (magic != MAGIC_118 && magic != MAGIC_120)
		return magic == 0xfffffffau || magic == 0xfffffffbu ? -ENOTSUP : -EINVAL;
	/* pad1, pad2 0; minLC (the pc quantum) 1 and pointers of 8 on x86-64. */
	if (p[4] || p[5] || p[6] != 1 || p[7] != 8)
		return -ENOTSUP;
	for (i = 0; i < 8; i++)
		w[i] = rd64(p + 8 + 8 * i);
	g->p = p;
	g->len = len;
	g->version = magic == MAGIC_118 ? 118 : 120;
	g->nfunc = w[0];
	/* w[1]: nfiles */
	/* runtime.text, up to Go 1.25: right even where the caller's guess is
	 * not (a stripped cgo program's .text starts with C code). Go 1.26's
	 * linker writes 0 (the runtime reads moduledata.text instead,
	 * cmd/link/internal/ld/pcln.go), as a PIE's file has where a
	 * relocation fills it: the caller's text then, what debug/gosym
	 * always takes. */
	g->text_start = w[2] ? w[2] : text;
	g->funcnames = w[3];
	g->cutab = w[4];
	g->filetab = w[5];
	g->pctab = w[6];
	g->functab = w[7];
	if (g->funcnames > len || g->cutab > len || g->filetab > len || g->pctab > len)
		return -EINVAL;
	/* The function table: nfunc + 1 (entry, func) pairs of uint32. */
	if (g->functab > len || g->nfunc >= (len - g->functab) / 8)
		return -EINVAL;
	return 0;
}

static uint32_t read_varint(const struct gopcln *g, uint64_t *off, int *ok)
{
	uint32_t v = 0;
	unsigned shift;

	for (shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*off >= g->len) {
			*ok = 0;
			return 0;
		}
		b = g->p[(*off)++];
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	*ok = 0;
	return 0;
}

/* The value of a pc-value table (runtime.pcvalue) at pc, entry the
 * function's start; -1 when the table does not cover pc. */
static int64_t pcvalue(const struct gopcln *g, uint32_t table, uint64_t entry, uint64_t pc)
{
	uint64_t off = g->pctab + table, at = entry;
	int32_t val = -1;
	unsigned n;
	int ok = 1;

	if (!table || g->pctab > g->len || table > g->len - g->pctab)
		return -1;
	for (n = 0; n < MAX_STEPS; n++) {
		uint32_t uv, pcd;

		if (off >= g->len || (n && !g->p[off]))
			return -1; /* the end, before pc */
		uv = read_varint(g, &off, &ok);
		pcd = read_varint(g, &off, &ok);
		if (!ok)
			return -1;
		/* Zig-zag delta, added with wrap-around as Go's int32 does: a
		 * hostile table must not overflow a C int (found by fuzzing). */
		val = (int32_t)((uint32_t)val + (-(uv & 1) ^ (uv >> 1)));
		at += pcd; /* minLC is 1 */
		if (pc < at)
			return val;
	}
	return -1;
}

int gopcln_lookup(const struct gopcln *g, uint64_t pc, const char **func, const char **file,
		  int *line)
{
	uint64_t lo = 0, hi = g->nfunc, fo, off;
	uint32_t entry, nameoff, pcfile, pcln, cu;
	int64_t fileno, ln;
	int ok = 1;

	if (!g->p || pc < g->text_start || pc - g->text_start > UINT32_MAX)
		return -ENOENT;
	off = pc - g->text_start;
	/* The last function whose entry is <= pc; the n+1-th entry ends the
	 * last one. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (at32(g, g->functab, 2 * mid, &ok) <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || !ok || off >= at32(g, g->functab, 2 * g->nfunc, &ok))
		return -ENOENT;
	entry = at32(g, g->functab, 2 * (lo - 1), &ok);
	fo = g->functab + (uint64_t)at32(g, g->functab, 2 * (lo - 1) + 1, &ok);
	/* _func: entryOff, nameOff, args, deferreturn, pcsp, pcfile, pcln,
	 * npcdata, cuOffset (then startLine in 1.20, funcID...). */
	if (!ok || at32(g, fo, 0, &ok) != entry)
		return -ENOENT;
	nameoff = at32(g, fo, 1, &ok);
	pcfile = at32(g, fo, 5, &ok);
	pcln = at32(g, fo, 6, &ok);
	cu = at32(g, fo, 8, &ok);
	if (!ok)
		return -ENOENT;
	*func = str_at(g, g->funcnames + nameoff);
	fileno = pcvalue(g, pcfile, entry, off);
	ln = pcvalue(g, pcln, entry, off);
	if (!*func || fileno < 0 || ln <= 0 || ln > INT32_MAX)
		return -ENOENT;
	/* The CU's file list: uint32 offsets into filetab. */
	off = at32(g, g->cutab, (uint64_t)cu + (uint64_t)fileno, &ok);
	if (!ok || off == UINT32_MAX || !(*file = str_at(g, g->filetab + off)))
		return -ENOENT;
	*line = (int)ln;
	return 0;
}
