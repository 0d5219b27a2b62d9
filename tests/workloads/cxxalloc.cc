// A C++ program built with frame pointers whose time goes into Debian's
// libstdc++ and libc, which have none: operator new -> malloc, and
// snprintf's __vfprintf_internal. Usage: cxxalloc SECONDS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

__attribute__((noinline)) static size_t churn(int round)
{
	std::vector<std::string> v;
	char buf[64];
	size_t n = 0;

	for (int i = 0; i < 200; i++) {
		snprintf(buf, sizeof(buf), "%d:%f:%s", round * i, i * 0.5, "abcdefghijklmnopqrstuvwxyz");
		v.emplace_back(buf);
		n += v.back().size();
	}
	return n;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	auto t0 = std::chrono::steady_clock::now();
	size_t total = 0;
	int round = 0;

	while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs)
		total += churn(round++);
	return total == 42; // never: keeps the work
}
