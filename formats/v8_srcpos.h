/* V8's source position tables and script line ends, read from another
 * process's copies: pure C over byte buffers, unit-tested and fuzzed.
 *
 * A source position table (a BytecodeArray's or a Code's ByteArray, V8's
 * src/codegen/source-position-table.cc) is a run of entries, each two
 * zigzag VLQ integers (7 bits a byte, low first, bit 7: more): the code
 * offset's delta from the previous entry's (its sign says whether the
 * entry is a statement: -delta - 1 when not) and the source position's
 * delta. A position is V8's SourcePosition: bit 0 external, bits 1-30
 * the offset in the script, bits 31-46 the inlining id + 1 (0: not
 * inlined). Everything read is hostile: lengths and deltas are bounded,
 * a malformed table is refused, never read past. */
#ifndef FORMATS_V8_SRCPOS_H
#define FORMATS_V8_SRCPOS_H

#include <stddef.h>
#include <stdint.h>

/* Entries a table is read for, at most (a function's bytecode is < 1 MiB
 * and each entry takes 2 bytes at least). */
#define V8_SRCPOS_MAX_ENTRIES (1u << 20)

/* The source position of the code at code_offset: the last entry's whose
 * code offset is <= it (as V8's AbstractCode::SourcePosition). 0 and *pos;
 * -ENOENT when the first entry is past code_offset (or there is none);
 * -EINVAL when the table is malformed up to there (a VLQ cut or longer
 * than 64 bits, a code offset going down or negative, a position out of
 * SourcePosition's 47 bits). */
int v8_srcpos_find(const uint8_t *tab, size_t len, uint32_t code_offset, int64_t *pos);

/* A SourcePosition's offset in its script, and its inlining id (-1: the
 * code's own function; else an index into its deoptimization data's
 * inlining positions). */
static inline int32_t v8_srcpos_script_offset(int64_t pos)
{
	return (int32_t)((pos >> 1) & ((1 << 30) - 1));
}
static inline int32_t v8_srcpos_inlining_id(int64_t pos)
{
	return (int32_t)((pos >> 31) & 0xffff) - 1;
}

/* Bytes of one of V8's InliningPosition (src/codegen/source-position.h):
 * the inlined call's SourcePosition (8 bytes, little endian), the inlined
 * function's index into the deoptimization data's literals (an int), 4
 * bytes of padding. A DeoptimizationData's InliningPositions (a PodArray,
 * a ByteArray's bytes) is a run of them, indexed by inlining id. */
#define V8_INLINING_POSITION_SIZE 16

/* One frame of an optimized code position, as V8's own stack traces and
 * --cpu-prof give it (SourcePosition::InliningStack). */
struct v8_inline_frame {
	int32_t literal;       /* the function's literal index; -1: the code's own function */
	int32_t script_offset; /* the frame's position in its script */
};

/* The frames at pos (a position of optimized code's source position
 * table) through its code's InliningPositions (ipos, len bytes): the
 * innermost first, then each inlined call's caller, the code's own
 * function (literal -1) last. 0 and *nout (<= max); -EINVAL when len is
 * not whole positions, an inlining id is past them or a literal index
 * negative, or the chain is longer than the positions (a cycle); -E2BIG
 * when more than max frames. */
int v8_inline_expand(const uint8_t *ipos, size_t len, int64_t pos, struct v8_inline_frame *out,
		     size_t max, size_t *nout);

/* The 1-based line of a script offset from the script's line ends (the
 * offset of each line's '\n', or of its end for the last, ascending; V8's
 * Script::line_ends): 0 and *line, or -EINVAL (offset < 0, past the last
 * end, or ends not ascending where the search looked). */
int v8_line_of(const int32_t *ends, size_t n, int32_t offset, int *line);

/* The line ends of a script's text (up to max of them): their count (the
 * last one the text's end), for v8_line_of. */
size_t v8_line_ends(const char *text, size_t len, int32_t *ends, size_t max);

#endif
