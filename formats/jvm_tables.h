#ifndef FORMATS_JVM_TABLES_H
#define FORMATS_JVM_TABLES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef int (*jvm_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
typedef uint64_t (*jvm_sym_fn)(void *ctx, const char *name);
struct jvm_tables;
int jvm_tables_read(struct jvm_tables **out, jvm_read_fn rd, jvm_sym_fn sym, void *ctx, char *err, size_t errlen);
void jvm_tables_free(struct jvm_tables *t);
int64_t jvm_field_offset(const struct jvm_tables *t, const char *type, const char *field);
uint64_t jvm_static_address(const struct jvm_tables *t, const char *type, const char *field);
int64_t jvm_type_size(const struct jvm_tables *t, const char *type);
bool jvm_int_const(const struct jvm_tables *t, const char *name, int32_t *v);
bool jvm_long_const(const struct jvm_tables *t, const char *name, uint64_t *v);
#endif
