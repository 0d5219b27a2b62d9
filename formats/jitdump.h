/* perf jitdump files (../shared/specs/jitdump-specification.txt): a parser
 * that builds a time-aware index of the JIT code (an address can be reused
 * by a later LOAD, or code moved by MOVE), and a writer for tests.
 * The input is untrusted: every length is bounded by what is left, fields are
 * read unaligned, a truncated tail is normal (the runtime is still writing). */
#ifndef FORMATS_JITDUMP_H
#define FORMATS_JITDUMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JITDUMP_FLAGS_ARCH_TIMESTAMP 1ULL

enum jit_record {
	JIT_LOAD = 0,
	JIT_MOVE = 1,
	JIT_DEBUG_INFO = 2,
	JIT_CLOSE = 3,
	JIT_UNWINDING_INFO = 4
};

struct jit_line {
	uint64_t addr;
	uint32_t line, discrim;
	const char *file;
};

struct jit_sym {
	uint64_t start, size;
	uint64_t t_start, t_end; /* live in [t_start, t_end); t_end UINT64_MAX: to the end */
	uint64_t code_index;
	const char *name;
	const struct jit_line *lines; /* sorted by addr; from DEBUG_INFO */
	size_t nlines;
};

struct jitdump {
	uint32_t version, elf_mach, pid;
	uint64_t timestamp, flags;
	struct jit_sym *syms; /* sorted by start */
	size_t nsyms;
	int timed; /* record times are comparable with CLOCK_MONOTONIC */
	/* diagnostics */
	uint64_t records[5], unknown, truncated_bytes, bad_names;
	/* storage */
	char *strings;
	size_t strings_len;
	struct jit_line *lines;
	size_t nlines;
};

/* conv, when not NULL, turns ARCH_TIMESTAMP (TSC) times into CLOCK_MONOTONIC
 * ns; without it such a dump resolves by address only (timed = 0).
 * Returns 0, or -EINVAL with *err set (bad magic, short header, unknown
 * version) and nothing allocated; -ENOMEM. */
int jitdump_parse(const void *buf, size_t len, uint64_t (*conv)(void *ctx, uint64_t raw),
		  void *conv_ctx, struct jitdump *out, const char **err);
void jitdump_free(struct jitdump *d);

/* The code at addr at time t (CLOCK_MONOTONIC ns): the symbol live then, or,
 * if none was, the one covering addr nearest in time (samples may precede a
 * record slightly). NULL when no code ever covered addr. */
const struct jit_sym *jitdump_lookup(const struct jitdump *d, uint64_t addr, uint64_t t);
/* The source line of addr within s (the last line entry at or before it). */
const struct jit_line *jitdump_line(const struct jit_sym *s, uint64_t addr);

/* Writer, for tests: native byte order, version 1. */
void jitdump_write_header(FILE *f, uint32_t pid, uint64_t timestamp, uint64_t flags);
void jitdump_write_load(FILE *f, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t addr,
			uint64_t size, uint64_t index, const char *name);
void jitdump_write_move(FILE *f, uint64_t ts, uint32_t pid, uint32_t tid, uint64_t old_addr,
			uint64_t new_addr, uint64_t size, uint64_t index);
void jitdump_write_debug(FILE *f, uint64_t ts, uint64_t code_addr, const struct jit_line *l,
			 size_t n);
void jitdump_write_close(FILE *f, uint64_t ts);

#endif
