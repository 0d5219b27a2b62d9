/* HotSpot's vmStructs tables (formats/jvm_tables.h). All four tables are
 * read by one loop driven by a description of their entries; names go to
 * one arena (offset 0 holds "", the field name of the tables that have
 * none) and each table is then sorted by (name, field) for lookups. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/jvm_tables.h"
#include "formats/util.h"

/* One table entry as read: arena offsets of its name (and a struct's field
 * name), and its values (a field's offset or a type's size or a constant). */
struct jvm_entry {
	uint32_t name, field;
	bool is_static;
	uint64_t value, address;
};

struct jvm_entries {
	VEC_BODY(struct jvm_entry)
};

enum { TAB_STRUCTS, TAB_TYPES, TAB_INTS, TAB_LONGS, TAB_N };

struct jvm_tables {
	struct fmt_buf arena;
	struct jvm_entries tab[TAB_N];
};

/* An entry's fields in the order of struct tab_desc's offset variables. */
enum { F_NAME, F_FIELD, F_STATIC, F_OFFSET, F_ADDRESS, F_MAX };

/* How to read one table. Only the fields the lookups need are read: an
 * unread field (a struct's TypeString, a type's superclass) is one string
 * less to fetch and one less place for a bad pointer. */
struct tab_desc {
	const char *table, *stride;
	const char *off[F_MAX]; /* the variables holding each field's offset */
	uint8_t size[F_MAX];	/* its bytes: 8 (pointer, uint64) or 4 (int32) */
	uint8_t strings;	/* bit i: field i points to a C string */
	uint8_t n;
};

static const struct tab_desc descs[TAB_N] = {
    [TAB_STRUCTS] = {"gHotSpotVMStructs",
		     "gHotSpotVMStructEntryArrayStride",
		     {"gHotSpotVMStructEntryTypeNameOffset", "gHotSpotVMStructEntryFieldNameOffset",
		      "gHotSpotVMStructEntryIsStaticOffset", "gHotSpotVMStructEntryOffsetOffset",
		      "gHotSpotVMStructEntryAddressOffset"},
		     {8, 8, 4, 8, 8},
		     1 << F_NAME | 1 << F_FIELD,
		     5},
    /* Types and constants put their size or value where a struct has its
     * field name: the second field. */
    [TAB_TYPES] = {"gHotSpotVMTypes",
		   "gHotSpotVMTypeEntryArrayStride",
		   {"gHotSpotVMTypeEntryTypeNameOffset", "gHotSpotVMTypeEntrySizeOffset"},
		   {8, 8},
		   1 << F_NAME,
		   2},
    [TAB_INTS] = {"gHotSpotVMIntConstants",
		  "gHotSpotVMIntConstantEntryArrayStride",
		  {"gHotSpotVMIntConstantEntryNameOffset", "gHotSpotVMIntConstantEntryValueOffset"},
		  {8, 4},
		  1 << F_NAME,
		  2},
    [TAB_LONGS] = {"gHotSpotVMLongConstants",
		   "gHotSpotVMLongConstantEntryArrayStride",
		   {"gHotSpotVMLongConstantEntryNameOffset",
		    "gHotSpotVMLongConstantEntryValueOffset"},
		   {8, 8},
		   1 << F_NAME,
		   2},
};

/* A string already read, by its address in the process: a struct's type
 * name is shared by all its fields, so most names are read once. */
struct str_seen {
	uint64_t addr;
	uint32_t off;
};

struct reader {
	jvm_read_fn rd;
	jvm_sym_fn sym;
	void *ctx;
	char *err;
	size_t errlen;
	struct jvm_tables *t;
	VEC(struct str_seen) seen;
	struct idtab seen_ids;
};

static int fail(struct reader *r, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct reader *r, int ret, const char *fmt, ...)
{
	va_list ap;

	if (r->err && r->errlen) {
		va_start(ap, fmt);
		vsnprintf(r->err, r->errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* A read error as -errno: a callback that breaks its contract with 0 or
 * a positive value still fails the read. */
static int read_mem(struct reader *r, uint64_t addr, void *buf, size_t len)
{
	int ret = r->rd(r->ctx, addr, buf, len);

	return ret < 0 ? ret : ret > 0 ? -EIO : 0;
}

/* One of libjvm's 8-byte variables. */
static int read_var(struct reader *r, const char *name, uint64_t *v)
{
	uint64_t addr = r->sym(r->ctx, name);
	int ret;

	if (!addr)
		return fail(r, -ENOENT, "libjvm has no %s", name);
	ret = read_mem(r, addr, v, sizeof(*v));
	if (ret)
		return fail(r, ret, "%s unreadable at 0x%" PRIx64, name, addr);
	return 0;
}

static bool seen_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct reader *r = ctx;

	return r->seen.v[id].addr == *(const uint64_t *)key;
}

/* The string at addr into the arena: its offset there in *off. Read in
 * chunks that never cross a page, so that a short name at the end of a
 * mapping is not lost to the bytes after it. 1: no NUL within
 * JVM_NAME_MAX bytes; else 0 or -errno. */
static int read_str(struct reader *r, uint64_t addr, uint32_t *off)
{
	uint64_t h = hash_u64(addr);
	uint32_t id = idtab_find(&r->seen_ids, h, seen_eq, r, &addr);
	char buf[JVM_NAME_MAX];
	size_t n = 0;
	struct fmt_buf *a = &r->t->arena;

	if (id != UINT32_MAX) {
		*off = r->seen.v[id].off;
		return 0;
	}
	if (addr > UINT64_MAX - JVM_NAME_MAX)
		return -EFAULT;
	while (n < JVM_NAME_MAX) {
		size_t chunk = 4096 - ((addr + n) & 4095);
		char *z;
		int ret;

		if (chunk > JVM_NAME_MAX - n)
			chunk = JVM_NAME_MAX - n;
		ret = read_mem(r, addr + n, buf + n, chunk);
		if (ret)
			return ret;
		z = memchr(buf + n, 0, chunk);
		if (z) {
			struct str_seen s = {addr, (uint32_t)a->n};

			fmt_put(a, buf, (size_t)(z - buf) + 1);
			if (a->err || VEC_PUSH(r->seen, s) ||
			    idtab_insert(&r->seen_ids, h, (uint32_t)(r->seen.n - 1)))
				return -ENOMEM;
			*off = s.off;
			return 0;
		}
		n += chunk;
	}
	return 1;
}

static uint64_t field_value(const uint8_t *e, uint64_t off, uint8_t size)
{
	int32_t i32;
	uint64_t u64;

	if (size == 4) {
		memcpy(&i32, e + off, sizeof(i32));
		return (uint64_t)(int64_t)i32; /* sign-extended: a negative constant */
	}
	memcpy(&u64, e + off, sizeof(u64));
	return u64;
}

static int read_table(struct reader *r, int tab)
{
	const struct tab_desc *d = &descs[tab];
	uint64_t base, stride, off[F_MAX];
	uint8_t e[256];
	int ret;

	if ((ret = read_var(r, d->table, &base)) || (ret = read_var(r, d->stride, &stride)))
		return ret;
	if (stride < 8 || stride > sizeof(e))
		return fail(r, -EINVAL, "%s: stride %" PRIu64 " not in [8, 256]", d->table, stride);
	for (int f = 0; f < d->n; f++) {
		if ((ret = read_var(r, d->off[f], &off[f])))
			return ret;
		if (off[f] > stride - d->size[f])
			return fail(r, -EINVAL, "%s: %s %" PRIu64 " outside the stride %" PRIu64,
				    d->table, d->off[f], off[f], stride);
	}
	if (!base)
		return fail(r, -EINVAL, "%s is NULL", d->table);
	for (uint32_t i = 0; i < JVM_TABLE_MAX_ENTRIES; i++) {
		struct jvm_entry ent = {0};
		uint64_t v[F_MAX] = {0}, addr;

		if (base > UINT64_MAX - (uint64_t)(i + 1) * stride)
			return fail(r, -EINVAL, "%s: entry %u past the address space", d->table, i);
		addr = base + (uint64_t)i * stride;
		ret = read_mem(r, addr, e, stride);
		if (ret)
			return fail(r, ret, "%s: entry %u unreadable at 0x%" PRIx64, d->table, i,
				    addr);
		for (int f = 0; f < d->n; f++)
			v[f] = field_value(e, off[f], d->size[f]);
		if (!v[F_NAME]) { /* the terminator */
			VEC_SHRINK(r->t->tab[tab]);
			return 0;
		}
		for (int f = 0; f < d->n; f++) {
			uint64_t p = v[f];
			uint32_t s;

			if (!(d->strings & 1 << f))
				continue;
			ret = p ? read_str(r, p, &s) : -EFAULT;
			if (ret == -ENOMEM)
				return fail(r, ret, "out of memory");
			if (ret < 0)
				return fail(r, ret, "%s: entry %u's %s unreadable at 0x%" PRIx64,
					    d->table, i, f == F_NAME ? "name" : "field name", p);
			if (ret)
				return fail(r, -EINVAL, "%s: entry %u's %s has no NUL in %d bytes",
					    d->table, i, f == F_NAME ? "name" : "field name",
					    JVM_NAME_MAX);
			v[f] = s;
		}
		ent.name = (uint32_t)v[F_NAME];
		if (tab == TAB_STRUCTS) {
			ent.field = (uint32_t)v[F_FIELD];
			ent.is_static = (uint32_t)v[F_STATIC] != 0;
			ent.value = v[F_OFFSET];
			ent.address = v[F_ADDRESS];
		} else {
			ent.value = v[1];
		}
		if (VEC_PUSH(r->t->tab[tab], ent))
			return fail(r, -ENOMEM, "out of memory");
	}
	return fail(r, -EINVAL, "%s: no terminator within %d entries", d->table,
		    JVM_TABLE_MAX_ENTRIES);
}

static int cmp_entry(const void *a, const void *b, void *arena)
{
	const struct jvm_entry *x = a, *y = b;
	const char *s = arena;
	int c = strcmp(s + x->name, s + y->name);

	return c ? c : strcmp(s + x->field, s + y->field);
}

int jvm_tables_read(struct jvm_tables **out, jvm_read_fn rd, jvm_sym_fn sym, void *ctx, char *err,
		    size_t errlen)
{
	struct reader r = {.rd = rd, .sym = sym, .ctx = ctx, .err = err, .errlen = errlen};
	int ret = 0;

	*out = NULL;
	if (err && errlen)
		err[0] = 0;
	r.t = calloc(1, sizeof(*r.t));
	if (!r.t)
		return fail(&r, -ENOMEM, "out of memory");
	fmt_put(&r.t->arena, "", 1);
	if (r.t->arena.err)
		ret = fail(&r, -ENOMEM, "out of memory");
	for (int tab = 0; tab < TAB_N && !ret; tab++)
		ret = read_table(&r, tab);
	VEC_FREE(r.seen);
	idtab_free(&r.seen_ids);
	if (ret) {
		jvm_tables_free(r.t);
		return ret;
	}
	for (int tab = 0; tab < TAB_N; tab++)
		if (r.t->tab[tab].n > 1) /* an empty table has no array to give qsort */
			qsort_r(r.t->tab[tab].v, r.t->tab[tab].n, sizeof(struct jvm_entry),
				cmp_entry, r.t->arena.p);
	*out = r.t;
	return 0;
}

void jvm_tables_free(struct jvm_tables *t)
{
	if (!t)
		return;
	for (int tab = 0; tab < TAB_N; tab++)
		VEC_FREE(t->tab[tab]);
	free(t->arena.p);
	free(t);
}

/* The first entry (name, field) of a sorted table, or NULL. */
static const struct jvm_entry *find(const struct jvm_tables *t, int tab, const char *name,
				    const char *field)
{
	const struct jvm_entries *e = &t->tab[tab];
	const char *s = (const char *)t->arena.p;
	size_t lo = 0, hi = e->n;

	if (!name || !field)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s + e->v[mid].name, name);

		if (!c)
			c = strcmp(s + e->v[mid].field, field);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < e->n && !strcmp(s + e->v[lo].name, name) && !strcmp(s + e->v[lo].field, field))
		return &e->v[lo];
	return NULL;
}

int64_t jvm_field_offset(const struct jvm_tables *t, const char *type, const char *field)
{
	const struct jvm_entry *e = t ? find(t, TAB_STRUCTS, type, field) : NULL;

	return e && !e->is_static && e->value <= INT64_MAX ? (int64_t)e->value : -1;
}

uint64_t jvm_static_address(const struct jvm_tables *t, const char *type, const char *field)
{
	const struct jvm_entry *e = t ? find(t, TAB_STRUCTS, type, field) : NULL;

	return e && e->is_static ? e->address : 0;
}

int64_t jvm_type_size(const struct jvm_tables *t, const char *type)
{
	const struct jvm_entry *e = t ? find(t, TAB_TYPES, type, "") : NULL;

	return e && e->value <= INT64_MAX ? (int64_t)e->value : -1;
}

bool jvm_int_const(const struct jvm_tables *t, const char *name, int32_t *v)
{
	const struct jvm_entry *e = t ? find(t, TAB_INTS, name, "") : NULL;

	if (e)
		*v = (int32_t)e->value;
	return e != NULL;
}

bool jvm_long_const(const struct jvm_tables *t, const char *name, uint64_t *v)
{
	const struct jvm_entry *e = t ? find(t, TAB_LONGS, name, "") : NULL;

	if (e)
		*v = e->value;
	return e != NULL;
}
