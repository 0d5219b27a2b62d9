/* libFuzzer target: user/symbols.c on an ELF file (written to a memfd, as
 * the tool opens binaries by fd): symbol-table and .eh_frame_hdr loading,
 * lookups by file offset, FDE function starts, the frame-pointer sampling. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "user/symbols.h"

struct seen {
	uint64_t va[16];
	size_t n;
};

static int on_sym(void *ctx, const struct symfile_sym *y)
{
	struct seen *s = ctx;

	if (s->n < 16)
		s->va[s->n++] = y->vaddr;
	return 0;
}

static void look(struct symfile *f, uint64_t off)
{
	uint64_t va, sa;
	const char *sys, *name = NULL;

	symfile_lookup(f, off, &va, &sa, &sys);
	symfile_func_start(f, off, &name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen seen = {.n = 0};
	struct symfile *f;
	char path[64];
	size_t i;
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	f = symfile_get(fd, path);
	if (f) {
		symfile_foreach(f, on_sym, &seen);
		for (i = 0; i < seen.n; i++) {
			uint64_t off = symfile_offset(f, seen.va[i]);

			if (off != UINT64_MAX) {
				look(f, off);
				look(f, off + 1);
			}
		}
		look(f, 0);
		look(f, size / 2);
		symfile_build_id(f);
	}
	symfiles_free();
	close(fd);
	return 0;
}
