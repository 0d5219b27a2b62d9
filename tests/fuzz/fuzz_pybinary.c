/* libFuzzer target: user/runtime/python.c's py_binary_read on an ELF file (written
 * to a memfd, as the tool opens binaries by fd): the symbols that make a
 * CPython, its version (Py_Version, the API symbols, PY_VERSION in .rodata)
 * and 3.13's _Py_DebugOffsets. The committed seed is a 1.8 KB static
 * program whose _PyRuntime starts with the real _Py_DebugOffsets of pyenv's
 * CPython 3.13.0 (with Py_Version and the type symbols). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "user/runtime/python.h"
#include "user/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_binary b;
	int fd = memfd_create("fuzz-python", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	msg_set_verbosity(-1);
	if (write(fd, data, size) == (ssize_t)size && !py_binary_read(fd, "fuzz", &b) &&
	    (!b.has_layout || b.layout.version != (b.major << 8 | b.minor)))
		__builtin_trap(); /* a layout is always its version's */
	close(fd);
	return 0;
}
