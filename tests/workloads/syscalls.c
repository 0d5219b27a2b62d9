/* Syscall-heavy workload: reads /dev/zero in large chunks, so most time is
 * spent in the kernel (read_zero / clear_user). Usage: syscalls SECONDS. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	struct timespec a, b;
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		if (read(fd, buf, sizeof(buf)) < 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while (secs <= 0 || (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	return 0;
}
