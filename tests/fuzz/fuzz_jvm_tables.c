/* libFuzzer target: formats/jvm_tables.c on a libjvm image from another
 * process. The input is the memory at a fixed base (FAKE_BASE); its first
 * 24 * 8 bytes are libjvm's exported variables in the order of syms[]
 * below (their addresses are base + 8 * i), and pointers in it point into
 * the input or nowhere. Every read is bounds-checked against the input.
 * The corpus (tests/fuzz/corpus/jvm_tables) holds small good images in
 * JDK 17's layout. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "formats/jvm_tables.h"

#define FAKE_BASE 0x10000ULL

static const char *const syms[] = {
    "gHotSpotVMStructs",
    "gHotSpotVMStructEntryArrayStride",
    "gHotSpotVMStructEntryTypeNameOffset",
    "gHotSpotVMStructEntryFieldNameOffset",
    "gHotSpotVMStructEntryTypeStringOffset",
    "gHotSpotVMStructEntryIsStaticOffset",
    "gHotSpotVMStructEntryOffsetOffset",
    "gHotSpotVMStructEntryAddressOffset",
    "gHotSpotVMTypes",
    "gHotSpotVMTypeEntryArrayStride",
    "gHotSpotVMTypeEntryTypeNameOffset",
    "gHotSpotVMTypeEntrySuperclassNameOffset",
    "gHotSpotVMTypeEntryIsOopTypeOffset",
    "gHotSpotVMTypeEntryIsIntegerTypeOffset",
    "gHotSpotVMTypeEntryIsUnsignedOffset",
    "gHotSpotVMTypeEntrySizeOffset",
    "gHotSpotVMIntConstants",
    "gHotSpotVMIntConstantEntryArrayStride",
    "gHotSpotVMIntConstantEntryNameOffset",
    "gHotSpotVMIntConstantEntryValueOffset",
    "gHotSpotVMLongConstants",
    "gHotSpotVMLongConstantEntryArrayStride",
    "gHotSpotVMLongConstantEntryNameOffset",
    "gHotSpotVMLongConstantEntryValueOffset",
};

struct image {
	const uint8_t *p;
	size_t n;
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *m = ctx;

	if (addr < FAKE_BASE || addr - FAKE_BASE > m->n || len > m->n - (addr - FAKE_BASE))
		return -EFAULT;
	memcpy(buf, m->p + (addr - FAKE_BASE), len);
	return 0;
}

static uint64_t sym(void *ctx, const char *name)
{
	(void)ctx;
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!strcmp(syms[i], name))
			return FAKE_BASE + 8 * i;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image m = {data, size};
	struct jvm_tables *t;
	char err[128];
	int32_t i;
	uint64_t v;

	if (jvm_tables_read(&t, rd, sym, &m, err, sizeof(err))) {
		if (t || !memchr(err, 0, sizeof(err)))
			__builtin_trap(); /* a failure leaves nothing and ends its message */
		return 0;
	}
	jvm_field_offset(t, "CodeBlob", "_name");
	jvm_static_address(t, "CodeCache", "_heaps");
	jvm_type_size(t, "HeapBlock");
	jvm_int_const(t, "InvocationEntryBci", &i);
	jvm_long_const(t, "markWord::hash_mask", &v);
	jvm_tables_free(t);
	return 0;
}
