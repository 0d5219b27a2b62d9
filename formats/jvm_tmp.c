#include <stdio.h>
/* TEMPORARY quick versions, replaced by the helper's formats units. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "formats/jvm_tables.h"
#include "formats/jvm_debuginfo.h"
struct ent {
	char *a, *b;
	int64_t off;
	uint64_t addr;
	int st;
};
struct jvm_tables {
	struct ent *s;
	size_t ns;
	struct ent *t;
	size_t nt;
	struct ent *c;
	size_t nc;
};
static int rstr(jvm_read_fn rd, void *ctx, uint64_t a, char **out)
{
	char buf[257];
	size_t n = 0;
	*out = NULL;
	if (!a)
		return 0;
	while (n < 256) {
		if (rd(ctx, a + n, buf + n, 1))
			return -EFAULT;
		if (!buf[n])
			break;
		n++;
	}
	if (n == 256)
		return -EINVAL;
	buf[n] = 0;
	*out = strdup(buf);
	return 0;
}
static uint64_t v64(jvm_read_fn rd, void *ctx, jvm_sym_fn sym, const char *n, int *ok)
{
	uint64_t a = sym(ctx, n), v = 0;
	if (!a || rd(ctx, a, &v, 8))
		*ok = 0;
	return v;
}
int jvm_tables_read(struct jvm_tables **out, jvm_read_fn rd, jvm_sym_fn sym, void *ctx, char *err,
		    size_t errlen)
{
	struct jvm_tables *t = calloc(1, sizeof(*t));
	int ok = 1;
	uint64_t a = v64(rd, ctx, sym, "gHotSpotVMStructs", &ok),
		 st = v64(rd, ctx, sym, "gHotSpotVMStructEntryArrayStride", &ok),
		 tn = v64(rd, ctx, sym, "gHotSpotVMStructEntryTypeNameOffset", &ok),
		 fn = v64(rd, ctx, sym, "gHotSpotVMStructEntryFieldNameOffset", &ok),
		 is = v64(rd, ctx, sym, "gHotSpotVMStructEntryIsStaticOffset", &ok),
		 of = v64(rd, ctx, sym, "gHotSpotVMStructEntryOffsetOffset", &ok),
		 ad = v64(rd, ctx, sym, "gHotSpotVMStructEntryAddressOffset", &ok);
	if (!ok || !t) {
		snprintf(err, errlen, "no structs");
		free(t);
		return -ENOENT;
	}
	for (size_t i = 0; i < 16384; i++, a += st) {
		uint64_t p1 = 0, p2 = 0;
		int32_t s = 0;
		uint64_t o = 0, ada = 0;
		char *x, *y;
		if (rd(ctx, a + tn, &p1, 8) || rd(ctx, a + fn, &p2, 8))
			break;
		if (!p1)
			break;
		rd(ctx, a + is, &s, 4);
		rd(ctx, a + of, &o, 8);
		rd(ctx, a + ad, &ada, 8);
		if (rstr(rd, ctx, p1, &x) || rstr(rd, ctx, p2, &y))
			break;
		t->s = realloc(t->s, (t->ns + 1) * sizeof(*t->s));
		t->s[t->ns++] = (struct ent){x, y, (int64_t)o, ada, s};
	}
	a = v64(rd, ctx, sym, "gHotSpotVMTypes", &ok);
	st = v64(rd, ctx, sym, "gHotSpotVMTypeEntryArrayStride", &ok);
	tn = v64(rd, ctx, sym, "gHotSpotVMTypeEntryTypeNameOffset", &ok);
	of = v64(rd, ctx, sym, "gHotSpotVMTypeEntrySizeOffset", &ok);
	for (size_t i = 0; ok && i < 16384; i++, a += st) {
		uint64_t p1 = 0, o = 0;
		char *x;
		if (rd(ctx, a + tn, &p1, 8) || !p1)
			break;
		rd(ctx, a + of, &o, 8);
		if (rstr(rd, ctx, p1, &x))
			break;
		t->t = realloc(t->t, (t->nt + 1) * sizeof(*t->t));
		t->t[t->nt++] = (struct ent){x, NULL, (int64_t)o, 0, 0};
	}
	a = v64(rd, ctx, sym, "gHotSpotVMIntConstants", &ok);
	st = v64(rd, ctx, sym, "gHotSpotVMIntConstantEntryArrayStride", &ok);
	tn = v64(rd, ctx, sym, "gHotSpotVMIntConstantEntryNameOffset", &ok);
	of = v64(rd, ctx, sym, "gHotSpotVMIntConstantEntryValueOffset", &ok);
	for (size_t i = 0; ok && i < 16384; i++, a += st) {
		uint64_t p1 = 0;
		int32_t v = 0;
		char *x;
		if (rd(ctx, a + tn, &p1, 8) || !p1)
			break;
		rd(ctx, a + of, &v, 4);
		if (rstr(rd, ctx, p1, &x))
			break;
		t->c = realloc(t->c, (t->nc + 1) * sizeof(*t->c));
		t->c[t->nc++] = (struct ent){x, NULL, v, 0, 0};
	}
	*out = t;
	return 0;
}
void jvm_tables_free(struct jvm_tables *t)
{
	if (!t)
		return;
	free(t->s);
	free(t->t);
	free(t->c);
	free(t);
}
int64_t jvm_field_offset(const struct jvm_tables *t, const char *type, const char *field)
{
	for (size_t i = 0; i < t->ns; i++)
		if (!t->s[i].st && !strcmp(t->s[i].a, type) && !strcmp(t->s[i].b, field))
			return t->s[i].off;
	return -1;
}
uint64_t jvm_static_address(const struct jvm_tables *t, const char *type, const char *field)
{
	for (size_t i = 0; i < t->ns; i++)
		if (t->s[i].st && !strcmp(t->s[i].a, type) && !strcmp(t->s[i].b, field))
			return t->s[i].addr;
	return 0;
}
int64_t jvm_type_size(const struct jvm_tables *t, const char *type)
{
	for (size_t i = 0; i < t->nt; i++)
		if (!strcmp(t->t[i].a, type))
			return t->t[i].off;
	return -1;
}
bool jvm_int_const(const struct jvm_tables *t, const char *name, int32_t *v)
{
	for (size_t i = 0; i < t->nc; i++)
		if (!strcmp(t->c[i].a, name)) {
			*v = (int32_t)t->c[i].off;
			return true;
		}
	return false;
}
bool jvm_long_const(const struct jvm_tables *t, const char *name, uint64_t *v)
{
	(void)t;
	(void)name;
	(void)v;
	return false;
}
/* streams */
struct rs {
	const uint8_t *p;
	size_t n, i;
	int bad;
};
static uint32_t rd_int(struct rs *s)
{
	if (s->i >= s->n) {
		s->bad = 1;
		return 0;
	}
	uint32_t b0 = s->p[s->i++];
	if (b0 < 192)
		return b0;
	uint32_t sum = b0;
	int sh = 6;
	for (int i = 1; i <= 4; i++) {
		if (s->i >= s->n) {
			s->bad = 1;
			return 0;
		}
		uint32_t b = s->p[s->i++];
		sum += b << sh;
		if (b < 192 || i == 4)
			return sum;
		sh += 6;
	}
	return sum;
}
static int32_t rd_sint(struct rs *s)
{
	uint32_t v = rd_int(s);
	return (int32_t)((v >> 1) ^ -(int32_t)(v & 1));
}
int jvm_line_for_bci(const uint8_t *tab, size_t len, int bci, int *line)
{
	struct rs s = {tab, len, 0, 0};
	int b = 0, l = 0, best = -1, bestl = 0;
	for (int k = 0; k < 65536; k++) {
		if (s.i >= len)
			return best >= 0 ? (*line = bestl, 0) : -ENOENT;
		uint8_t x = tab[s.i++];
		if (!x)
			break;
		if (x == 0xff) {
			b += rd_sint(&s);
			l += rd_sint(&s);
			if (s.bad)
				return -EINVAL;
		} else {
			b += x >> 3;
			l += x & 7;
		}
		if (b == bci) {
			*line = l;
			return 0;
		}
		if (b < bci && b >= best) {
			best = b;
			bestl = l;
		}
	}
	if (best < 0)
		return -ENOENT;
	*line = bestl;
	return 0;
}
int jvm_pcdesc_find(const uint8_t *pcs, size_t len, const struct jvm_pcdesc_layout *l,
		    int32_t pc_offset, bool exact, struct jvm_pcdesc *out)
{
	if (!l->size)
		return -EINVAL;
	for (size_t i = 0; i + l->size <= len; i += l->size) {
		int32_t po, so;
		memcpy(&po, pcs + i + l->pc_offset, 4);
		memcpy(&so, pcs + i + l->scope_decode_offset, 4);
		if ((exact && po == pc_offset) || (!exact && po >= pc_offset)) {
			out->pc_offset = po;
			out->scope_decode_offset = so;
			return 0;
		}
	}
	return -ENOENT;
}
int jvm_scopes_chain(const uint8_t *data, size_t len, int off, struct jvm_scope *out, int max)
{
	int n = 0;
	while (off > 0 && n < max) {
		struct rs s = {data, len, (size_t)off, 0};
		int sender = (int)rd_int(&s);
		int mi = (int)rd_int(&s);
		int bci = (int)rd_int(&s) - 1;
		if (s.bad || (size_t)off >= len)
			return n ? n : -EINVAL;
		out[n].metadata_index = mi;
		out[n].bci = bci;
		n++;
		if (sender >= off)
			break;
		off = sender;
	}
	return n;
}
