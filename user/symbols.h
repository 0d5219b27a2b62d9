/* ELF symbol tables (cached by device and inode, so each binary is read once)
 * and the kernel's symbols from /proc/kallsyms. */
#ifndef USER_SYMBOLS_H
#define USER_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symfile;

/* Returns the cached symbol table of the file open at fd (the caller keeps
 * fd), reading it on first use; never NULL for a readable file: a file with no
 * symbols gives an empty table. NULL only on ENOMEM or a non-ELF file. The
 * caller holds it (names it returns stay valid) until symfile_put. */
struct symfile *symfile_get(int fd, const char *path);
void symfile_put(struct symfile *f);

/* Name of the function at a file offset (as in /proc/PID/maps: address -
 * start + offset), demangled (C++, Rust); NULL when no symbol covers it.
 * PLT stubs are named func@plt, and code at the ELF entry point with no
 * symbol _start, as perf and objdump name them.
 * *vaddr gets the ELF virtual address of that offset (what llvm-symbolizer
 * and nm speak); *system_name the mangled name, NULL when the name is not
 * mangled. */
const char *symfile_lookup(struct symfile *f, uint64_t file_off, uint64_t *vaddr,
			   uint64_t *sym_addr, const char **system_name);
/* The file offset of an ELF vaddr, or UINT64_MAX when no PT_LOAD has it. */
uint64_t symfile_offset(const struct symfile *f, uint64_t vaddr);
/* A symbol name demangled (Itanium C++, Rust legacy and v0, by libiberty's
 * cplus_demangle) and sanitized, malloc'd; a version suffix
 * (memcpy@GLIBC_2.2.5) kept after it. NULL when it is not a mangled name
 * (or on ENOMEM). */
char *demangle_name(const char *raw);
/* The name shown for raw, the i-th of n names: demangled on its first call
 * and kept in *names (made then, NULL before; freed with demangle_cache_free).
 * raw itself when it is not mangled. */
const char *demangle_cached(char ***names, size_t n, size_t i, const char *raw);
void demangle_cache_free(char **names, size_t n);

/* One name of a function: every alias at an address is one. */
struct symfile_sym {
	uint64_t vaddr, size;
	const char *name;    /* as in the symbol table (mangled) */
	const char *version; /* its .dynsym version (GLIBC_2.2.5), or NULL */
	bool hidden;	     /* a non-default version: name@VER, not name@@VER */
	const char *display; /* demangled name */
	const char *primary; /* what symfile_lookup names the address by */
};
/* Calls fn for every function symbol, aliases included, in address order;
 * stops when fn returns non-zero and returns that. */
typedef int (*symfile_fn)(void *ctx, const struct symfile_sym *s);
int symfile_foreach(struct symfile *f, symfile_fn fn, void *ctx);
const char *symfile_build_id(const struct symfile *f); /* hex, or NULL */
/* The names made here that no symbol table of the file holds (func@plt
 * stubs, _start): when the symbol that names a file offset is one, fn gets
 * it and each of them it adjoins (a PLT's stubs, one after another), in
 * address order, for the readers that name frames from the file itself
 * (cpu-PID.prof's). Returns fn's non-zero, else 0 (also when the name there
 * is the file's own, or there is none). */
int symfile_synth_run(struct symfile *f, uint64_t file_off, symfile_fn fn, void *ctx);
/* Source file and line at a file offset (as symfile_lookup takes it) where
 * the file or its build-id debug file has DWARF (libdw, loaded on the first
 * call): 0, or -ENOENT. *file stays valid until symfiles_trim or symfiles_free. */
int symfile_srcline(struct symfile *f, uint64_t file_off, const char **file, int *line);
/* A long -a run meets ever new programs: frees the files nobody has held
 * for idle_ns before now (CLOCK_MONOTONIC), and the debug info (source
 * lines, .eh_frame ranges) of the others not looked up for as long, read
 * again on the next lookup. */
void symfiles_trim(uint64_t now, uint64_t idle_ns);
/* The ELF vaddr where the function at a file offset starts, by its
 * .eh_frame FDE: what names a function of a stripped binary, which has no
 * symbol (gzip, coreutils); 0 when no FDE covers it. *name gets the name
 * of a code known by its FDE and bytes (__restore_rt), else is left. */
uint64_t symfile_func_start(struct symfile *f, uint64_t file_off, const char **name);
/* The functions named by their .eh_frame FDE alone (no symbol covers them:
 * a stripped library's statics, which symfile_func_start names) that adjoin
 * the one at a file offset, for the readers that name frames from the file
 * itself (cpu-PID.prof's): fn gets each, {vaddr: its FDE's start, size: its
 * FDE's range, names NULL}, in address order, for as long as each follows
 * the one before it with no more than alignment padding between. Returns
 * fn's non-zero, else 0 (also when no such function holds the offset). */
int symfile_fde_run(struct symfile *f, uint64_t file_off, symfile_fn fn, void *ctx);
/* The bytes that name covers from the function's start: its FDE's first
 * byte (before the code, as a signal frame's FDE starts), the code, and
 * the address after it (the pc of a sample taken in its syscall). */
#define SYMFILE_RESTORE_RT_SIZE 11
void symfiles_free(void);

/* Kernel symbols. kallsyms_lookup returns NULL before a successful load. */
int kallsyms_load(void);
/* What kallsyms_load does with the file's text: parses text (NUL-terminated
 * at text[len], changed in place) into the table, which copies the names it
 * keeps, and frees text, error or not. 0, -EPERM when every address is 0
 * (kptr_restrict), or -ENOMEM (the table is then empty). */
int kallsyms_parse(char *text, size_t len);
const char *kallsyms_lookup(uint64_t addr, const char **module);
void kallsyms_free(void);

#endif
