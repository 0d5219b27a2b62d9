/* SystemTap SDT (USDT) probe notes: the .note.stapsdt section of an ELF
 * file, one NT_STAPSDT note per probe site (what `readelf -n` prints). Only
 * the names and what a caller checks before attaching are read; libbpf
 * decodes the argument specs and attaches. The section is outside input:
 * every length is checked against it. */
#ifndef FORMATS_STAPSDT_H
#define FORMATS_STAPSDT_H

#include <stddef.h>
#include <stdint.h>

struct stapsdt_probe {
	const char *provider, *name, *args; /* inside the section's bytes */
	uint64_t pc, base, semaphore;	    /* semaphore 0: none */
	unsigned nargs;			    /* argument specs in args ("8@%rbx -4@%eax") */
};

/* Calls fn for each probe note of the section's bytes (little-endian,
 * 64-bit); fn returns 0 to go on, else that value is returned. Returns 0,
 * or -EINVAL for a malformed note (the notes before it were passed). */
typedef int (*stapsdt_fn)(void *ctx, const struct stapsdt_probe *p);
int stapsdt_parse(const void *sec, size_t len, stapsdt_fn fn, void *ctx);

#endif
