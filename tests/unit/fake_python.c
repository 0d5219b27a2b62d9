/* A program that only looks like CPython, for tests/unit/test_python.c: it
 * exports _PyRuntime, the type objects and (by -DFAKE_VERSION) a Py_Version,
 * and fills _PyRuntime with pointers to itself, so that every chain a walk
 * follows loops (interpreters, threads, frames) and every object it reads
 * has the wrong type. Built with -rdynamic, as Debian's python3.11 is. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

uintptr_t _PyRuntime[8192];
uintptr_t PyCode_Type[64], PyUnicode_Type[64], PyBytes_Type[64];
#ifdef FAKE_VERSION
const unsigned long Py_Version = FAKE_VERSION;
#endif

int main(void)
{
	for (size_t i = 0; i < sizeof(_PyRuntime) / sizeof(_PyRuntime[0]); i++)
		_PyRuntime[i] = (uintptr_t)_PyRuntime;
	PyCode_Type[0] = 1;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	pause();
	return 0;
}
