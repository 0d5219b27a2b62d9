// --heap against heaptrack on a real C++ program (tests/integration/
// test_heap.sh's heap_vs_heaptrack_cxx): the bytes are what libstdc++'s
// containers ask operator new for, not sizes chosen here, so the shares are
// heaptrack's to tell, not the test's.
//   heapmap [N [WAIT_S]]
// fill_map: a std::map<uint64_t, uint64_t> of N entries (a node each), kept
// to the end; fill_hash: a std::unordered_map of N entries (a node each and
// its bucket arrays, each rehash freeing the last), every other entry erased
// and the rest kept; fill_vector: std::vector<uint64_t>s grown by push_back
// to N (their doublings, each freed). WAIT_S: a sleep before the work (for
// -p to attach), which SIGUSR1 ends.
//
// No std::string: heaptrack 1.4 (Debian 12's, libunwind) finds no frame of
// an allocation made in libstdc++'s basic_string functions (_M_construct,
// _M_mutate): it files them all under one unknown stack, which no site's
// share can be compared with; the containers' allocations are made by their
// templates, compiled here with frame pointers and unwind tables.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <unistd.h>
#include <unordered_map>
#include <vector>

static std::map<uint64_t, uint64_t> *kept_map;
static std::unordered_map<uint64_t, uint64_t> *kept_hash;

__attribute__((noinline)) static void fill_map(int n)
{
	kept_map = new std::map<uint64_t, uint64_t>;
	for (int i = 0; i < n; i++)
		(*kept_map)[(uint64_t)i * 2654435761u] = i;
}

__attribute__((noinline)) static void fill_hash(int n)
{
	kept_hash = new std::unordered_map<uint64_t, uint64_t>;
	for (int i = 0; i < n; i++)
		(*kept_hash)[(uint64_t)i * 40503u] = i;
	for (int i = 0; i < n; i += 2)
		kept_hash->erase((uint64_t)i * 40503u);
}

__attribute__((noinline)) static size_t fill_vector(int n)
{
	size_t s = 0;

	for (int r = 0; r < 8; r++) {
		std::vector<uint64_t> v;

		for (int i = 0; i < n; i++)
			v.push_back((uint64_t)i * r);
		s += v.capacity();
	}
	return s;
}

static void wake(int) {}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200000, wait_s = argc > 2 ? atoi(argv[2]) : 0;

	signal(SIGUSR1, wake);
	fprintf(stderr, "heapmap: pid %d\n", getpid());
	sleep(wait_s);
	fill_map(n);
	fill_hash(n);
	size_t s = fill_vector(n);
	printf("heapmap: %zu map entries, %zu hash entries, %zu vector slots\n", kept_map->size(),
	       kept_hash->size(), s);
	return 0;
}
