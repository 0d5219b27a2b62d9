/* --heap and an allocator loaded with dlopen after the recording started
 * (tests/integration/test_heap.sh's heap_dlopen): glibc_site allocates and
 * frees ROUNDS x 256 blocks with glibc's malloc, then LIB is loaded with
 * dlopen and dl_site allocates and frees the same blocks with its malloc
 * and free (dlsym'd): 50:50 of the bytes, by construction. Prints the
 * bytes of each.
 *   heapdl LIB [ROUNDS] */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*dl_malloc)(size_t);
static void (*dl_free)(void *);

static size_t size_of(int i)
{
	return 64 + (size_t)(i * 2654435761u % 65536);
}

/* ROUNDS x 256 blocks allocated and freed with m and f: their bytes. */
static uint64_t blocks(int rounds, void *(*m)(size_t), void (*f)(void *))
{
	uint64_t n = 0;

	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < 256; i++) {
			char *p = m(size_of(i));

			if (!p)
				abort();
			p[0] = 1;
			n += size_of(i);
			f(p);
		}
	return n;
}

/* The two sites the profile names: each its own frame under blocks. */
static __attribute__((noinline)) uint64_t glibc_site(int rounds)
{
	return blocks(rounds, malloc, free) + (uint64_t)rand() % 1; /* not a tail call */
}

static __attribute__((noinline)) uint64_t dl_site(int rounds)
{
	return blocks(rounds, dl_malloc, dl_free) + (uint64_t)rand() % 1;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 40;
	uint64_t g, d;
	void *lib;

	if (argc < 2) {
		fprintf(stderr, "usage: heapdl LIB [ROUNDS]\n");
		return 2;
	}
	g = glibc_site(rounds);
	/* RTLD_LOCAL: the program's malloc stays glibc's; the library's is
	 * called by its address alone, as a plugin's would be. */
	if (!(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) ||
	    !(dl_malloc = (void *(*)(size_t))dlsym(lib, "malloc")) ||
	    !(dl_free = (void (*)(void *))dlsym(lib, "free"))) {
		fprintf(stderr, "heapdl: %s\n", dlerror());
		return 1;
	}
	d = dl_site(rounds);
	printf("alloc glibc_site=%llu dl_site=%llu total=%llu\n", (unsigned long long)g,
	       (unsigned long long)d, (unsigned long long)(g + d));
	return 0;
}
