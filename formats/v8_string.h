/* V8 heap strings read from another process's memory: sequential one-byte
 * and two-byte, cons, thin and sliced (external ones are refused: their
 * characters live behind an embedder's C++ object). The one reader of V8
 * strings in the tool (function names, script names), pure C over a read
 * callback, so that it is unit-tested and fuzzed on memory images.
 *
 * Everything read is hostile: each object's map and instance type are
 * checked to be a string's, lengths and offsets against each other, the
 * depth of cons, thin and sliced chains and the number of reads bounded;
 * the output is UTF-8 with no control characters, cut to its buffer. */
#ifndef FORMATS_V8_STRING_H
#define FORMATS_V8_STRING_H

#include <stddef.h>
#include <stdint.h>

/* Reads len bytes at addr: 0, or -errno (nothing is used of a failed read). */
typedef int (*v8_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The layout, from the binary's v8dbg_* constants (user/runtime/v8.c). Offsets are
 * from the object's start (its tagged pointer less the heap object tag). */
struct v8_string_layout {
	uint32_t map;	    /* HeapObject::map */
	uint32_t map_type;  /* Map::instance_type (a uint16) */
	uint32_t length;    /* String::length (an int32) */
	uint32_t seq1_data; /* SeqOneByteString's characters */
	uint32_t seq2_data; /* SeqTwoByteString's */
	uint32_t cons_first, cons_second, sliced_parent, sliced_offset, thin_actual;
	/* Instance types below first_nonstring are strings; their bits say
	 * which (V8's StringRepresentationMask and StringEncodingMask). */
	uint32_t first_nonstring;
	uint32_t repr_mask, enc_mask, one_byte_tag;
	uint32_t seq_tag, cons_tag, sliced_tag, thin_tag;
	uint32_t heap_tag, heap_tag_mask; /* a tagged pointer's low bits */
	uint32_t smi_shift;		  /* a Smi's value: the word >> smi_shift */
};

/* How deep a chain of cons, thin and sliced strings is followed, and how
 * many reads one string may take. */
#define V8_STRING_DEPTH 24
#define V8_STRING_READS 256
/* Characters of a string read at most (the output is cut there). */
#define V8_STRING_MAX 4096

/* The string at the tagged pointer str into out (size > 0), UTF-8 and
 * NUL-terminated; *len (may be NULL) its length. 0 (cut to size - 1 bytes
 * when longer); -EINVAL when the object is not a string or its fields are
 * not sane; -ENOTSUP for an external string (anywhere in the chain);
 * -ELOOP past V8_STRING_DEPTH or V8_STRING_READS; the read's -errno. On
 * failure out is "". */
int v8_string_read(const struct v8_string_layout *l, v8_read_fn rd, void *ctx, uint64_t str,
		   char *out, size_t size, size_t *len);

/* As v8_string_read, with the line feeds kept: a script's source, whose
 * lines are counted (formats/v8_srcpos.h's v8_line_ends). */
int v8_string_read_text(const struct v8_string_layout *l, v8_read_fn rd, void *ctx, uint64_t str,
			char *out, size_t size, size_t *len);

/* The instance type of the object at the tagged pointer obj (its map's):
 * 0 and *type, or -errno (-EINVAL: not a heap object pointer). */
int v8_instance_type(const struct v8_string_layout *l, v8_read_fn rd, void *ctx, uint64_t obj,
		     uint16_t *type);

#endif
