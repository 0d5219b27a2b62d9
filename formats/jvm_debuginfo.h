/* HotSpot's compressed debug data, as JDK 17 writes it:
 * - CompressedReadStream's UNSIGNED5 ints (code/compressedStream.hpp, from
 *   Pack200): a byte below L = 192 ends a value, a byte from 192 on gives
 *   6 more bits; at most 5 bytes, the fifth taken whole. Signed ints are
 *   zigzag-coded: (v >> 1) ^ -(v & 1).
 * - The compressed line number table after a method's bytecodes
 *   (ConstMethod::compressed_linenumber_table, CompressedLineNumberReadStream):
 *   byte 0 ends it; 0xFF is followed by a signed bci delta and a signed
 *   line delta; any other byte b adds b >> 3 to the bci and b & 7 to the line.
 * - The PcDesc array of an nmethod (code/pcDesc.hpp): records sorted by
 *   pc_offset, the first a sentinel at -1, the last one past the code.
 * - ScopeDescs in the nmethod's scopes data (code/scopeDesc.cpp,
 *   decode_body): sender decode offset, method (a metadata index, 0: NULL),
 *   bci + 1, then the locals, expressions and monitors decode offsets.
 * JDK 11 writes all four the same way. JDK 20 moved UNSIGNED5 into
 * utilities/unsigned5.hpp with an optional count of excluded low byte
 * values; CompressedReadStream (so the line table and the scopes) uses none,
 * so JDK 21 encodes them as JDK 17 does. JDK 21's DebugInfoReadStream is still
 * a CompressedReadStream (the bit-packed CompressedSparseData streams are
 * not used for scopes), and its ScopeDesc header is the same.
 * The bytes come from another process's memory: every read is bounded by
 * the buffer's end, and running past it is an error, never a read. */
#ifndef FORMATS_JVM_DEBUGINFO_H
#define FORMATS_JVM_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CompressedReadStream::read_int and read_signed_int at *p (before end):
 * 0 with *p moved past the value, or -EINVAL when it runs past end. */
int jvm_read_int(const uint8_t **p, const uint8_t *end, uint32_t *v);
int jvm_read_signed_int(const uint8_t **p, const uint8_t *end, int32_t *v);

/* The (bci, line) pairs of a compressed line number table, in its order
 * (the class file's: not necessarily sorted). */
struct jvm_lnt_iter {
	const uint8_t *p, *end;
	int64_t bci, line; /* the running pair */
	bool done;
};
void jvm_lnt_init(struct jvm_lnt_iter *it, const uint8_t *tab, size_t len);
/* 1 and the next pair, 0 at the terminator, or -EINVAL: the table runs
 * past len, or a bci or line leaves [0, INT32_MAX] (a class file's are u2). */
int jvm_lnt_next(struct jvm_lnt_iter *it, int *bci, int *line);

/* Method::line_number_from_bci: the line of the pair whose bci is bci,
 * else of the last pair with the largest bci below it. bci -1
 * (SynchronizationEntryBCI) is 0. 0 and *line, -ENOENT when no pair is at
 * or below bci, or -EINVAL as above (an exact match before a malformed part
 * is still an answer, as HotSpot stops there too). HotSpot also answers
 * none for a bci at or past the method's code size: the caller, who has
 * it, checks. */
int jvm_line_for_bci(const uint8_t *tab, size_t len, int bci, int *line);

/* Where a PcDesc's fields are (vmStructs' PcDesc::_pc_offset and so on;
 * JDK 17: 0, 4, 8, 12) and its size (vmStructs' type size: 16). */
struct jvm_pcdesc_layout {
	size_t size, pc_offset, scope_decode_offset, obj_decode_offset, flags;
};
struct jvm_pcdesc {
	int32_t pc_offset, scope_decode_offset, obj_decode_offset, flags;
	size_t index; /* of the record in the array */
};
/* The PcDesc of pc_offset (bytes from the nmethod's code_begin) in the
 * array pcs[0, len):
 * - exact (a return address: HotSpot records a PcDesc at the return
 *   address of every call): the record at pc_offset;
 * - else (a sampled pc), as PcDescContainer::find_pc_desc_internal with
 *   approximate: the first record whose pc_offset is >= pc_offset, which
 *   may be the final sentinel (scope_decode_offset 0: no scope).
 * 0 and *out; -ENOENT: none (no records but the sentinels, a negative
 * pc_offset, or one past the last record); -EINVAL: a bad layout, len not
 * a multiple of its size, a first record that is not the -1 sentinel, or
 * records out of order where the search met them. */
int jvm_pcdesc_find(const uint8_t *pcs, size_t len, const struct jvm_pcdesc_layout *l,
		    int32_t pc_offset, bool exact, struct jvm_pcdesc *out);

/* One inlined frame: the method as an index into the nmethod's metadata
 * (0: NULL; else the Method* is metadata_begin[metadata_index - 1]) and
 * its bci (-1: InvocationEntryBci, the method's entry). */
struct jvm_scope {
	uint32_t metadata_index;
	int32_t bci;
	int32_t decode_offset; /* where it was read */
};
/* The scope at decode_offset in the scopes data data[0, len) and its
 * senders: innermost (the inlined callee a PcDesc names) first, out to the
 * nmethod's own method. Returns the count (0 for decode offset 0,
 * serialized_null: no scope, where HotSpot takes the nmethod's method at
 * bci -1), -E2BIG when the chain is longer than max, or -EINVAL: an offset
 * outside the data, a value running past it, a bci out of range, or a
 * sender not before its callee (HotSpot writes a caller's scope first, so
 * each sender offset is smaller: that also rules out cycles). */
int jvm_scopes_chain(const uint8_t *data, size_t len, int decode_offset, struct jvm_scope *out,
		     int max);

#endif
