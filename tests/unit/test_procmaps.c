/* The /proc/PID/maps parser, on this process's own maps and on odd lines. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "formats/procmaps.h"

static void test_odd_lines(void)
{
	static const char text[] =
	    "55d0c0a00000-55d0c0a21000 r-xp 00002000 fe:01 1234567 /usr/bin/my prog (deleted)\n"
	    "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n"
	    "7ffd1000-7ffd2000 r--p 00000000 00:00 0                  [vvar]\n"
	    "garbage\n"
	    "10-5 r-xp 0 0:0 0 backwards\n"
	    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";
	struct procmaps_entry *e;
	size_t n;

	CHECK(procmaps_parse(text, sizeof(text) - 1, &e, &n) == 0);
	CHECK(n == 4);
	CHECK(e[0].start == 0x55d0c0a00000 && e[0].end == 0x55d0c0a21000 && e[0].offset == 0x2000);
	CHECK(e[0].dev_major == 0xfe && e[0].dev_minor == 1 && e[0].inode == 1234567);
	CHECK(e[0].exec && e[0].deleted && !strcmp(e[0].path, "/usr/bin/my prog"));
	CHECK(e[1].exec && !e[1].deleted && !strcmp(e[1].path, ""));
	CHECK(!e[2].exec && !strcmp(e[2].path, "[vvar]"));
	CHECK(!strcmp(e[3].path, "[vsyscall]") && e[3].start == 0xffffffffff600000ULL);
	procmaps_free(e, n);
}

static void test_self(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char buf[1 << 16];
	size_t len = f ? fread(buf, 1, sizeof(buf), f) : 0, n, i;
	struct procmaps_entry *e;
	int found = 0;

	if (f)
		fclose(f);
	CHECK(procmaps_parse(buf, len, &e, &n) == 0 && n > 5);
	for (i = 0; i < n; i++)
		if (e[i].exec && (uintptr_t)test_self >= e[i].start &&
		    (uintptr_t)test_self < e[i].end && strstr(e[i].path, "test_procmaps"))
			found = 1;
	CHECK(found);
	procmaps_free(e, n);
}

int main(void)
{
	RUN_TEST(test_odd_lines);
	RUN_TEST(test_self);
	CHECK_EXIT();
}
