/* A stand-in for a JIT runtime, for the hostile-input tests: runs a spin
 * loop from an anonymous executable mapping (code that only a perf map can
 * name), after printing its address so the test can write that map.
 * argv[1], when given, becomes the process's comm (prctl PR_SET_NAME), so a
 * test can give it bytes that are not text. Runs until killed. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

int main(int argc, char **argv)
{
	static const unsigned char spin[] = {0xeb, 0xfe}; /* jmp . */
	void (*code)(void);
	void *p;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(p, spin, sizeof(spin));
	if (argc > 1 && prctl(PR_SET_NAME, argv[1], 0, 0, 0)) {
		perror("prctl");
		return 1;
	}
	printf("%lx\n", (unsigned long)p);
	fflush(stdout);
	code = (void (*)(void))p;
	code();
	return 0;
}
