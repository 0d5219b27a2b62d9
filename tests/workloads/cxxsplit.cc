// C++ names for the demangling tests: a function template in nested
// namespaces, taking a std::vector, instantiated twice, and a member
// function of a class template, splitting the work 6:3:1 by construction
// (as split.c does), so that a profile shows about 60%, 30% and 10% under
// names that demangle to "void geo::inner::sweep<int>(std::vector<int,...".
// Usage: cxxsplit SECONDS. Prints "ready" once running.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define UNIT 200000UL

// The same loop in each function, so that units weigh the same; a macro,
// since an inline function would be a frame of its own to DWARF readers.
#define BURN(units, x)                                                                             \
	for (unsigned long i = 0; i < (units) * UNIT; i++)                                         \
		x += i ^ (x >> 3)

namespace geo {
namespace inner {

template <typename T> __attribute__((noinline)) void sweep(std::vector<T> &v, unsigned long units)
{
	volatile unsigned long x = 0;

	BURN(units, x);
	v[0] = static_cast<T>(x & 1);
}

} // namespace inner

template <typename K> struct Box {
	K key;
	__attribute__((noinline)) void turn(const std::string &why, unsigned long units);
};

template <typename K> void Box<K>::turn(const std::string &why, unsigned long units)
{
	volatile unsigned long x = why.size();

	BURN(units, x);
	key = static_cast<K>(x & 1);
}

} // namespace geo

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	std::vector<int> vi(1);
	std::vector<double> vd(1);
	geo::Box<long> box{0};
	std::string why("round");
	unsigned seed = 1;

	printf("ready\n");
	fflush(stdout);
	while (std::chrono::steady_clock::now() < end) {
		// Rounds of 1 to 4 times the 6:3:1 (see split.c: fixed rounds
		// phase-lock with the sampler).
		unsigned long k = 1 + (seed = seed * 1103515245u + 12345u) % 4;

		geo::inner::sweep(vi, 6 * k);
		geo::inner::sweep(vd, 3 * k);
		box.turn(why, k);
	}
	return vi[0] + static_cast<int>(vd[0]) + static_cast<int>(box.key) == 99;
}
