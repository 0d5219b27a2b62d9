#ifndef FORMATS_JVM_DEBUGINFO_H
#define FORMATS_JVM_DEBUGINFO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
struct jvm_pcdesc_layout { uint32_t size, pc_offset, scope_decode_offset; };
struct jvm_pcdesc { int32_t pc_offset, scope_decode_offset; };
struct jvm_scope { int metadata_index, bci; };
int jvm_line_for_bci(const uint8_t *tab, size_t len, int bci, int *line);
int jvm_pcdesc_find(const uint8_t *pcs, size_t len, const struct jvm_pcdesc_layout *l, int32_t pc_offset, bool exact, struct jvm_pcdesc *out);
int jvm_scopes_chain(const uint8_t *data, size_t len, int decode_offset, struct jvm_scope *out, int max);
#endif
