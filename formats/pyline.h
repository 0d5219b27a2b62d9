/* CPython's line tables: the source line of an instruction of a code
 * object, from the bytes the interpreter keeps for its tracebacks
 * (Objects/codeobject.c's PyCode_Addr2Line, Objects/lnotab_notes.txt):
 * - co_lnotab (3.8, 3.9): pairs (bytecode delta, signed line delta);
 * - co_linetable (3.10): pairs (bytecode delta, signed line delta, -128:
 *   no line);
 * - the location table (3.11 on): entries of a header byte (bit 7 set, a
 *   code, a length in code units) and varints (line, end line, columns).
 * Every line is counted from the code object's co_firstlineno, which the
 * caller reads with the table. Offsets are in bytes of bytecode (a code
 * unit is 2 bytes), as dis and co_lines() give them. The bytes come from
 * another process's memory: every read is bounded by len, every step takes
 * at least one byte, and a line outside [0, INT_MAX] is a malformed table. */
#ifndef FORMATS_PYLINE_H
#define FORMATS_PYLINE_H

#include <stddef.h>
#include <stdint.h>

enum pyline_format {
	PYLINE_NONE = 0,
	PYLINE_LNOTAB,	  /* 3.8, 3.9: co_lnotab */
	PYLINE_LINETABLE, /* 3.10: co_linetable */
	PYLINE_LOCATIONS, /* 3.11 on: co_linetable, the location table */
};

/* The format of CPython major.minor (3.8 on), or PYLINE_NONE. */
enum pyline_format pyline_format_of(int major, int minor);

/* The ranges of a table in order, as co_lines() yields them. */
struct pyline_iter {
	const uint8_t *p, *end;
	enum pyline_format fmt;
	int64_t line;	 /* the running line */
	uint64_t offset; /* where the next range starts */
	int done;
};
struct pyline_range {
	uint64_t start, end; /* bytes [start, end); end UINT64_MAX: the rest (co_lnotab) */
	int line;	     /* -1: no line (3.10 on) */
};
/* A negative firstlineno makes every line malformed. */
void pyline_iter_init(struct pyline_iter *it, enum pyline_format fmt, const uint8_t *tab,
		      size_t len, int firstlineno);
/* The next range of at least one byte: 1, 0 after the last, or -EINVAL on a
 * malformed table (a truncated entry, a varint too long, a line outside
 * [0, INT_MAX], an unknown format). */
int pyline_next(struct pyline_iter *it, struct pyline_range *r);

/* The line of the instruction at byte offset off: 0 and *line, -ENOENT when
 * the table gives it no line (3.10 on: none, or past the table's end), or
 * -EINVAL as above. A negative offset (a frame not started: f_lasti -1)
 * is the first line, as in CPython. */
int pyline_lookup(enum pyline_format fmt, const uint8_t *tab, size_t len, int firstlineno,
		  int64_t off, int *line);

#endif
