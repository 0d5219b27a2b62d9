/* formats/jvm_tables.c on a synthetic libjvm: a memory image holding the
 * four tables (JDK 17's entry layouts and some of its real values), their
 * strings and the 24 exported variables, read through a bounds-checked
 * callback. Then the same image broken one way at a time: a missing
 * symbol, bad strides and field offsets, a NULL table, an unterminated
 * name, a table without a terminator, pointers outside the image and a
 * failing read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "formats/jvm_tables.h"

#define IMG_BASE 0x7f0000000000ULL
#define IMG_SIZE (1u << 20) /* a multiple of the page size: nothing mapped after it */

struct img {
	uint8_t *buf;
	size_t n;
	struct {
		const char *name;
		uint64_t addr;
	} syms[32];
	int nsyms;
	unsigned reads;
	int fail_errno; /* every read fails with it */
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct img *m = ctx;

	m->reads++;
	if (m->fail_errno)
		return -m->fail_errno;
	if (addr < IMG_BASE || addr - IMG_BASE > m->n || len > m->n - (addr - IMG_BASE))
		return -EFAULT;
	memcpy(buf, m->buf + (addr - IMG_BASE), len);
	return 0;
}

static uint64_t img_sym(void *ctx, const char *name)
{
	struct img *m = ctx;

	for (int i = 0; i < m->nsyms; i++)
		if (!strcmp(m->syms[i].name, name))
			return m->syms[i].addr;
	return 0;
}

static uint64_t put(struct img *m, const void *p, size_t len)
{
	uint64_t at;

	m->n = (m->n + 7) & ~(size_t)7;
	at = IMG_BASE + m->n;
	memcpy(m->buf + m->n, p, len);
	m->n += len;
	return at;
}

static uint64_t put_str(struct img *m, const char *s)
{
	return put(m, s, strlen(s) + 1);
}

static uint64_t sym_addr(struct img *m, const char *name)
{
	return img_sym(m, name);
}

/* Sets (or adds) an exported 8-byte variable. */
static void set_var(struct img *m, const char *name, uint64_t v)
{
	uint64_t a = sym_addr(m, name);

	if (a) {
		memcpy(m->buf + (a - IMG_BASE), &v, sizeof(v));
		return;
	}
	m->syms[m->nsyms].name = name;
	m->syms[m->nsyms++].addr = put(m, &v, sizeof(v));
}

static void poke64(struct img *m, uint64_t addr, uint64_t v)
{
	memcpy(m->buf + (addr - IMG_BASE), &v, sizeof(v));
}

struct field_def {
	const char *type, *field;
	int is_static;
	uint64_t offset, address;
};
static const struct field_def fields[] = {
    {"CodeBlob", "_name", 0, 96, 0},
    {"CodeBlob", "_frame_size", 0, 28, 0},
    {"CodeBlob", "_code_begin", 0, 32, 0},
    {"nmethod", "_compile_id", 0, 304, 0},
    {"CompiledMethod", "_method", 0, 112, 0},
    {"Method", "_constMethod", 0, 8, 0},
    {"ConstMethod", "_code_size", 0, 32, 0},
    {"Symbol", "_length", 0, 4, 0},
    {"Symbol", "_body", 0, 6, 0},
    {"CodeCache", "_heaps", 1, 0, 0x7f5352329730},
    {"CodeCache", "_low_bound", 1, 0, 0x7f535231c620},
    {"PcDesc", "_pc_offset", 0, 0, 0},
};
static const struct {
	const char *name;
	uint64_t size;
} types[] = {{"ConstMethod", 48}, {"HeapBlock", 16}, {"PcDesc", 16}, {"nmethod", 352}};
static const struct {
	const char *name;
	int32_t v;
} ints[] = {{"frame::interpreter_frame_last_sp_offset", -2}, {"InvocationEntryBci", -1}};
static const struct {
	const char *name;
	uint64_t v;
} longs[] = {{"markWord::hash_mask", 0x7fffffff}, {"markWord::no_hash", 0}};

/* Addresses in the image that the broken variants poke. */
struct where {
	uint64_t structs, types, ints, longs; /* the tables */
	uint64_t struct_name3;		      /* entry 3's field name pointer */
};

/* An entry at addr of a type or constant table: its name pointer first,
 * its value of vsize bytes at voff. */
static void put_named(struct img *m, uint64_t addr, const char *name, const void *v, size_t voff,
		      size_t vsize)
{
	uint64_t n = put_str(m, name);

	poke64(m, addr, n);
	memcpy(m->buf + (addr - IMG_BASE) + voff, v, vsize);
}

/* The tables with JDK 17's layouts: struct entries 48 bytes, types 40,
 * constants 16. The type names of the struct table are one string per
 * type, as in libjvm's .rodata. */
static void build(struct img *m, struct where *w)
{
	uint8_t e[48];
	uint64_t cb = 0;

	memset(m->buf, 0, IMG_SIZE);
	m->n = 0;
	m->nsyms = 0;
	m->reads = 0;
	m->fail_errno = 0;
	set_var(m, "gHotSpotVMStructEntryTypeNameOffset", 0);
	set_var(m, "gHotSpotVMStructEntryFieldNameOffset", 8);
	set_var(m, "gHotSpotVMStructEntryTypeStringOffset", 16);
	set_var(m, "gHotSpotVMStructEntryIsStaticOffset", 24);
	set_var(m, "gHotSpotVMStructEntryOffsetOffset", 32);
	set_var(m, "gHotSpotVMStructEntryAddressOffset", 40);
	set_var(m, "gHotSpotVMStructEntryArrayStride", 48);
	set_var(m, "gHotSpotVMTypeEntryTypeNameOffset", 0);
	set_var(m, "gHotSpotVMTypeEntrySuperclassNameOffset", 8);
	set_var(m, "gHotSpotVMTypeEntryIsOopTypeOffset", 16);
	set_var(m, "gHotSpotVMTypeEntryIsIntegerTypeOffset", 20);
	set_var(m, "gHotSpotVMTypeEntryIsUnsignedOffset", 24);
	set_var(m, "gHotSpotVMTypeEntrySizeOffset", 32);
	set_var(m, "gHotSpotVMTypeEntryArrayStride", 40);
	set_var(m, "gHotSpotVMIntConstantEntryNameOffset", 0);
	set_var(m, "gHotSpotVMIntConstantEntryValueOffset", 8);
	set_var(m, "gHotSpotVMIntConstantEntryArrayStride", 16);
	set_var(m, "gHotSpotVMLongConstantEntryNameOffset", 0);
	set_var(m, "gHotSpotVMLongConstantEntryValueOffset", 8);
	set_var(m, "gHotSpotVMLongConstantEntryArrayStride", 16);

	/* Struct entries, then the terminator (all zero). */
	w->structs = 0;
	for (size_t i = 0; i <= sizeof(fields) / sizeof(fields[0]); i++) {
		uint64_t tn = 0, fn = 0, ts = 0;
		int32_t st = 0;

		if (i < sizeof(fields) / sizeof(fields[0])) {
			const struct field_def *f = &fields[i];

			if (!strcmp(f->type, "CodeBlob") && cb)
				tn = cb;
			else
				tn = put_str(m, f->type);
			if (!strcmp(f->type, "CodeBlob"))
				cb = tn;
			fn = put_str(m, f->field);
			ts = put_str(m, "int");
			st = f->is_static;
		}
		memset(e, 0, sizeof(e));
		memcpy(e, &tn, 8);
		memcpy(e + 8, &fn, 8);
		memcpy(e + 16, &ts, 8);
		memcpy(e + 24, &st, 4);
		if (i < sizeof(fields) / sizeof(fields[0])) {
			memcpy(e + 32, &fields[i].offset, 8);
			memcpy(e + 40, &fields[i].address, 8);
		}
		/* The tables have areas of their own, away from the strings. */
		w->structs = IMG_BASE + 0x80000;
		memcpy(m->buf + (w->structs - IMG_BASE) + i * 48, e, 48);
		if (i == 3)
			w->struct_name3 = w->structs + i * 48 + 8;
	}
	w->types = IMG_BASE + 0x90000;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		put_named(m, w->types + i * 40, types[i].name, &types[i].size, 32, 8);
	w->ints = IMG_BASE + 0xa0000;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		put_named(m, w->ints + i * 16, ints[i].name, &ints[i].v, 8, 4);
		memset(m->buf + (w->ints - IMG_BASE) + i * 16 + 12, 0xaa, 4); /* not the int32's */
	}
	w->longs = IMG_BASE + 0xb0000;
	for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++)
		put_named(m, w->longs + i * 16, longs[i].name, &longs[i].v, 8, 8);
	set_var(m, "gHotSpotVMStructs", w->structs);
	set_var(m, "gHotSpotVMTypes", w->types);
	set_var(m, "gHotSpotVMIntConstants", w->ints);
	set_var(m, "gHotSpotVMLongConstants", w->longs);
	m->n = IMG_SIZE;
}

static struct img img;

static void test_good(void)
{
	struct jvm_tables *t = NULL;
	struct where w;
	char err[256];
	int32_t i32 = 0;
	uint64_t u64 = 1;

	build(&img, &w);
	CHECK(jvm_tables_read(&t, img_read, img_sym, &img, err, sizeof(err)) == 0);
	CHECK(t != NULL);
	CHECKF(err[0] == 0, "%s", err);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field_def *f = &fields[i];

		if (f->is_static) {
			CHECKF(jvm_static_address(t, f->type, f->field) == f->address, "%s::%s",
			       f->type, f->field);
			CHECK(jvm_field_offset(t, f->type, f->field) == -1);
		} else {
			CHECKF(jvm_field_offset(t, f->type, f->field) == (int64_t)f->offset,
			       "%s::%s", f->type, f->field);
			CHECK(jvm_static_address(t, f->type, f->field) == 0);
		}
	}
	CHECK(jvm_field_offset(t, "CodeBlob", "_nope") == -1);
	CHECK(jvm_field_offset(t, "CodeBlo", "_name") == -1);
	CHECK(jvm_field_offset(t, "CodeBlob", "") == -1);
	CHECK(jvm_field_offset(t, "ZZZ", "_name") == -1);
	CHECK(jvm_field_offset(t, NULL, "_name") == -1);
	CHECK(jvm_type_size(t, "ConstMethod") == 48);
	CHECK(jvm_type_size(t, "HeapBlock") == 16);
	CHECK(jvm_type_size(t, "nmethod") == 352);
	CHECK(jvm_type_size(t, "CodeBlob") == -1); /* a struct, not a type entry */
	CHECK(jvm_int_const(t, "frame::interpreter_frame_last_sp_offset", &i32) && i32 == -2);
	CHECK(jvm_int_const(t, "InvocationEntryBci", &i32) && i32 == -1);
	CHECK(!jvm_int_const(t, "markWord::hash_mask", &i32));
	CHECK(jvm_long_const(t, "markWord::hash_mask", &u64) && u64 == 0x7fffffff);
	CHECK(jvm_long_const(t, "markWord::no_hash", &u64) && u64 == 0);
	CHECK(!jvm_long_const(t, "InvocationEntryBci", &u64));
	/* One read a variable (19), an entry (13 + 5 + 3 + 3 with the
	 * terminators) and a string at a new address (30): "CodeBlob", shared
	 * by three fields, is read once. */
	CHECKF(img.reads == 19 + 24 + 30, "%u reads", img.reads);
	jvm_tables_free(t);
	jvm_tables_free(NULL);
	CHECK(jvm_field_offset(NULL, "CodeBlob", "_name") == -1);
}

/* Reads a broken image: the error and its message. */
static void expect_fail(int want, const char *msg)
{
	struct jvm_tables *t = (struct jvm_tables *)&img; /* must be reset to NULL */
	char err[256] = "";
	int ret = jvm_tables_read(&t, img_read, img_sym, &img, err, sizeof(err));

	CHECKF(ret == want, "%d, want %d (%s)", ret, want, err);
	CHECK(t == NULL);
	CHECKF(strstr(err, msg) != NULL, "\"%s\" lacks \"%s\"", err, msg);
	CHECK(strchr(err, '\n') == NULL);
}

/* The good image with one variable set to v: the error it must give. */
static void var_fails(const char *name, uint64_t v, int want, const char *msg)
{
	struct where w;

	build(&img, &w);
	set_var(&img, name, v);
	expect_fail(want, msg);
}

static void test_missing_symbol(void)
{
	struct where w;

	build(&img, &w);
	for (int i = 0; i < img.nsyms; i++)
		if (!strcmp(img.syms[i].name, "gHotSpotVMStructs"))
			img.syms[i].name = "renamed";
	expect_fail(-ENOENT, "libjvm has no gHotSpotVMStructs");
	build(&img, &w);
	for (int i = 0; i < img.nsyms; i++)
		if (!strcmp(img.syms[i].name, "gHotSpotVMLongConstantEntryValueOffset"))
			img.syms[i].name = "renamed";
	expect_fail(-ENOENT, "libjvm has no gHotSpotVMLongConstantEntryValueOffset");
	/* A symbol whose variable is not readable. */
	build(&img, &w);
	for (int i = 0; i < img.nsyms; i++)
		if (!strcmp(img.syms[i].name, "gHotSpotVMTypes"))
			img.syms[i].addr = 0x1000;
	expect_fail(-EFAULT, "gHotSpotVMTypes unreadable at 0x1000");
}

static void test_bad_layout(void)
{
	var_fails("gHotSpotVMStructEntryArrayStride", 0, -EINVAL,
		  "gHotSpotVMStructs: stride 0 not in [8, 256]");
	var_fails("gHotSpotVMTypeEntryArrayStride", 257, -EINVAL, "gHotSpotVMTypes: stride 257");
	var_fails("gHotSpotVMIntConstantEntryArrayStride", UINT64_MAX, -EINVAL,
		  "gHotSpotVMIntConstants: stride");
	/* An int32 field may end at the stride's end; an 8-byte one not past it. */
	var_fails("gHotSpotVMStructEntryOffsetOffset", 41, -EINVAL,
		  "gHotSpotVMStructEntryOffsetOffset 41 outside the stride 48");
	var_fails("gHotSpotVMStructEntryIsStaticOffset", UINT64_MAX - 2, -EINVAL,
		  "outside the stride");
	var_fails("gHotSpotVMLongConstants", 0, -EINVAL, "gHotSpotVMLongConstants is NULL");
}

/* The tables of the image as it is now, which must read. */
static struct jvm_tables *read_ok(void)
{
	struct jvm_tables *t = NULL;

	CHECK(jvm_tables_read(&t, img_read, img_sym, &img, NULL, 0) == 0);
	return t;
}

/* The good image with struct entry 3 (nmethod::_compile_id)'s field name
 * pointing at addr. */
static void name3_at(uint64_t addr)
{
	struct where w;

	build(&img, &w);
	poke64(&img, w.struct_name3, addr);
}

static void test_bad_strings(void)
{
	struct jvm_tables *t;
	struct where w;
	uint64_t s = IMG_BASE + 0xc0000;
	char name[256];

	/* 300 bytes without a NUL. */
	name3_at(s);
	memset(img.buf + (s - IMG_BASE), 'A', 300);
	expect_fail(-EINVAL, "gHotSpotVMStructs: entry 3's field name has no NUL in 256 bytes");
	/* Exactly 255 characters and the NUL: the longest name there may be. */
	img.buf[s - IMG_BASE + 255] = 0;
	memset(name, 'A', 255);
	name[255] = 0;
	t = read_ok();
	CHECK(t && jvm_field_offset(t, "nmethod", name) == 304);
	jvm_tables_free(t);
	/* A name whose NUL is the image's last byte: the reads in chunks must
	 * not ask for the bytes after it. */
	name3_at(IMG_BASE + IMG_SIZE - 6);
	memcpy(img.buf + IMG_SIZE - 6, "_last", 6);
	t = read_ok();
	CHECK(t && jvm_field_offset(t, "nmethod", "_last") == 304);
	jvm_tables_free(t);
	/* The same without its NUL: the image ends first. */
	img.buf[IMG_SIZE - 1] = 'x';
	expect_fail(-EFAULT, "entry 3's field name unreadable");
	/* Pointers outside the image, NULL and near the top of the space. */
	name3_at(0xdead0000);
	expect_fail(-EFAULT, "gHotSpotVMStructs: entry 3's field name unreadable at 0xdead0000");
	name3_at(0);
	expect_fail(-EFAULT, "entry 3's field name unreadable at 0x0");
	name3_at(UINT64_MAX - 3);
	expect_fail(-EFAULT, "entry 3's field name unreadable");
	build(&img, &w);
	poke64(&img, w.types + 40, 0xdead0000); /* type entry 1's name */
	expect_fail(-EFAULT, "gHotSpotVMTypes: entry 1's name unreadable at 0xdead0000");
}

static void test_bad_tables(void)
{
	struct jvm_tables *t;
	struct where w;
	uint64_t name, v;

	/* 16384 entries and no terminator. */
	build(&img, &w);
	name = IMG_BASE + 0xe0000;
	memcpy(img.buf + 0xe0000, "x", 2);
	for (size_t i = 0; i < JVM_TABLE_MAX_ENTRIES; i++)
		poke64(&img, IMG_BASE + 0x20000 + i * 16, name);
	set_var(&img, "gHotSpotVMIntConstants", IMG_BASE + 0x20000);
	expect_fail(-EINVAL, "gHotSpotVMIntConstants: no terminator within 16384 entries");
	/* A terminator as the 16384th entry is still in bounds. */
	poke64(&img, IMG_BASE + 0x20000 + (JVM_TABLE_MAX_ENTRIES - 1) * 16, 0);
	jvm_tables_free(read_ok());
	/* A table running off the image. */
	build(&img, &w);
	set_var(&img, "gHotSpotVMTypes", IMG_BASE + IMG_SIZE - 40);
	poke64(&img, IMG_BASE + IMG_SIZE - 40, w.structs); /* some non-NULL name */
	expect_fail(-EFAULT, "gHotSpotVMTypes: entry 1 unreadable");
	/* A table pointer outside the image, and one at the top of the space. */
	var_fails("gHotSpotVMStructs", 0xdead0000, -EFAULT,
		  "gHotSpotVMStructs: entry 0 unreadable at 0xdead0000");
	var_fails("gHotSpotVMStructs", UINT64_MAX - 16, -EINVAL, "past the address space");
	/* An empty table is fine. */
	build(&img, &w);
	set_var(&img, "gHotSpotVMLongConstants", IMG_BASE + 0xd0000);
	t = read_ok();
	CHECK(t && !jvm_long_const(t, "markWord::no_hash", &v));
	CHECK(t && jvm_type_size(t, "HeapBlock") == 16);
	jvm_tables_free(t);
}

static void test_read_errors(void)
{
	struct where w;

	build(&img, &w);
	img.fail_errno = ESRCH; /* the process is gone */
	expect_fail(-ESRCH, "gHotSpotVMStructs unreadable");
	/* No room for the message: still the error. */
	{
		struct jvm_tables *t;

		CHECK(jvm_tables_read(&t, img_read, img_sym, &img, NULL, 0) == -ESRCH);
		CHECK(t == NULL);
	}
}

int main(void)
{
	img.buf = malloc(IMG_SIZE);
	if (!img.buf)
		return 1;
	RUN_TEST(test_good);
	RUN_TEST(test_missing_symbol);
	RUN_TEST(test_bad_layout);
	RUN_TEST(test_bad_strings);
	RUN_TEST(test_bad_tables);
	RUN_TEST(test_read_errors);
	free(img.buf);
	CHECK_EXIT();
}
