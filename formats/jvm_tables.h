/* HotSpot's serviceability tables (vmStructs.cpp): the offsets of the JVM's
 * own fields, the sizes of its types and its constants, as libjvm exports
 * them for debuggers. libjvm has four arrays of entries, each ended by an
 * entry whose name pointer is NULL, and exports their addresses and the
 * layout of an entry as 8-byte variables:
 * - gHotSpotVMStructs: gHotSpotVMStructEntry{TypeName,FieldName,IsStatic,
 *   Offset,Address}Offset, gHotSpotVMStructEntryArrayStride;
 * - gHotSpotVMTypes: gHotSpotVMTypeEntry{TypeName,Size}Offset, ...Stride;
 * - gHotSpotVM{Int,Long}Constants: ...ConstantEntry{Name,Value}Offset, ...Stride.
 * The memory is another process's, read through a callback: every pointer,
 * count and length from it is checked (at most JVM_TABLE_MAX_ENTRIES entries
 * a table, names shorter than JVM_NAME_MAX with their NUL, strides within
 * [8, 256] and each field within its stride). */
#ifndef FORMATS_JVM_TABLES_H
#define FORMATS_JVM_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JVM_TABLE_MAX_ENTRIES 16384
#define JVM_NAME_MAX	      256

/* Copies len bytes at addr of the process: 0 or -errno. */
typedef int (*jvm_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
/* The runtime address of libjvm's symbol name, 0 when it has none. */
typedef uint64_t (*jvm_sym_fn)(void *ctx, const char *name);

struct jvm_tables;

/* Reads the four tables: 0, or -errno with err (when errlen > 0) naming in
 * one line what is missing or bad ("libjvm has no gHotSpotVMStructs",
 * "gHotSpotVMTypes: entry 12's name unreadable at 0x..."). -ENOENT: a
 * symbol is missing; -EINVAL: a table or layout is malformed; -ENOMEM; or
 * the read callback's error. */
int jvm_tables_read(struct jvm_tables **out, jvm_read_fn rd, jvm_sym_fn sym, void *ctx, char *err,
		    size_t errlen);
void jvm_tables_free(struct jvm_tables *t);

/* The offset of a non-static field ("CodeBlob", "_name"), -1: none. */
int64_t jvm_field_offset(const struct jvm_tables *t, const char *type, const char *field);
/* The address of a static field ("CodeCache", "_heaps"), 0: none. */
uint64_t jvm_static_address(const struct jvm_tables *t, const char *type, const char *field);
/* sizeof(type), -1: none. */
int64_t jvm_type_size(const struct jvm_tables *t, const char *type);
/* A constant's value: false when there is none. */
bool jvm_int_const(const struct jvm_tables *t, const char *name, int32_t *v);
bool jvm_long_const(const struct jvm_tables *t, const char *name, uint64_t *v);

#endif
