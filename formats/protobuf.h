/* The protobuf wire format, by hand: the writer primitives of the pprof and
 * OTLP encoders (formats/pprof.c, formats/otlp.c) and a bounds-checked
 * reader for their decoders. The messages are small and fixed, and a varint
 * and length-delimited codec is a few lines where a protobuf library would
 * need generated code. */
#ifndef FORMATS_PROTOBUF_H
#define FORMATS_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include "formats/util.h"

/* Wire types. */
enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

void pb_tag(struct fmt_buf *b, unsigned field, unsigned wire);
/* A varint field; proto3 omits zero values (so does this). */
void pb_uint(struct fmt_buf *b, unsigned field, uint64_t v);
/* A fixed64 field (omitted when zero). */
void pb_fixed64(struct fmt_buf *b, unsigned field, uint64_t v);
void pb_len(struct fmt_buf *b, unsigned field, const void *p, size_t n);
void pb_str(struct fmt_buf *b, unsigned field, const char *s);
/* A nested message, encoded in `sub` (reset here for the next one); an
 * allocation failure in sub sticks in b. */
void pb_msg(struct fmt_buf *b, unsigned field, struct fmt_buf *sub);
/* Packed varints, encoded through tmp. */
void pb_packed(struct fmt_buf *b, unsigned field, const uint64_t *v, size_t n, struct fmt_buf *tmp);

/* Reading: pb_next walks a message's fields. Every length and varint is
 * checked against the end; a malformed message sets err and ends the walk. */
struct pb_reader {
	const uint8_t *p, *end;
	int err; /* 0, or -EINVAL once malformed */
};

struct pb_field {
	unsigned field, wire;
	uint64_t v;	     /* PB_VARINT, PB_I64, PB_I32 */
	const uint8_t *data; /* PB_LEN */
	size_t len;
};

static inline struct pb_reader pb_reader(const void *p, size_t n)
{
	const uint8_t *b = p;

	/* NULL + 0 is undefined in C: an empty message may come as NULL. */
	return (struct pb_reader){b, b ? b + n : b, 0};
}
/* 1 and the next field in f, or 0 at the end or on error (r->err). Groups
 * (wire types 3 and 4) are errors: neither format has them. */
int pb_next(struct pb_reader *r, struct pb_field *f);
/* The values of a repeated varint field, packed (PB_LEN) or not (PB_VARINT):
 * 1 and the next in *v, or 0 at the end (err set in r when malformed). For
 * a PB_VARINT field, it yields f->v once. */
struct pb_values {
	struct pb_reader r;
	int once; /* PB_VARINT: 1 until yielded */
	uint64_t v;
};
struct pb_values pb_values(const struct pb_field *f);
int pb_values_next(struct pb_values *it, uint64_t *v);
/* The sub-message of a PB_LEN field. */
static inline struct pb_reader pb_sub(const struct pb_field *f)
{
	return pb_reader(f->data, f->len);
}

#endif
