/* The JIT image: google-pprof (and nm) name frames of a gperftools profile
 * whose mapping line points at jit-PID.so, in a 6:3:1 split. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "testutil.h"
#include "formats/cpuprofile.h"
#include "formats/jitelf.h"

static void test_readers_name_jit_code(void)
{
	char dir[] = "/tmp/test_jitelf.XXXXXX", so[128], prof[128], maps[512], *out;
	static const struct jitelf_line hot_lines[] = {{0x40002100, 1, "/app/a.js"},
						       {0x40002110, 3, "/app/a.js"}};
	struct jitelf_func f[] = {
	    {0x40002100, 0x80, "JS:*hot /app/a.js:1:1", hot_lines, 2},
	    {0x40001000, 0x100, "JS:~warm /app/a.js:9:1", NULL, 0},
	    {0x40001080, 0x40, "overlaps warm: dropped", NULL, 0},
	    {0x40003000, 0x20, "Stub:cold", NULL, 0},
	    {0x40004000, 0, "empty: dropped", NULL, 0},
	};
	uint64_t start, end, off, pcs[2];
	struct cpuprof *c = cpuprof_new(1000);
	FILE *fp;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(so, sizeof(so), "%s/jit-42.so", dir);
	snprintf(prof, sizeof(prof), "%s/cpu-42.prof", dir);
	fd = open(so, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(jitelf_write(fd, f, 5, &start, &end, &off) == 0);
	close(fd);
	CHECK(start == 0x40001000 && end == 0x40004000);
	out = run_cmd("nm -n %s", so);
	CHECKF(strstr(out, "T JS:*hot") && !strstr(out, "dropped"), "%s", out);
	free(out);
	pcs[1] = 0x40001010; /* caller: warm */
	pcs[0] = 0x40002110;
	cpuprof_add(c, pcs, 2, 60);
	pcs[0] = 0x40001020;
	cpuprof_add(c, pcs, 1, 30);
	pcs[0] = 0x40003004;
	cpuprof_add(c, pcs, 2, 10);
	/* The program first, as in a real process: pprof takes the first
	 * mapping for the binary given on its command line. */
	snprintf(maps, sizeof(maps),
		 "00400000-00401000 r-xp 00000000 00:00 0 /bin/true\n"
		 "%llx-%llx r-xp %08llx 00:00 0 %s\n",
		 (unsigned long long)start, (unsigned long long)end, (unsigned long long)off, so);
	fp = fopen(prof, "wb");
	CHECK(cpuprof_write(c, fp, maps) == 0);
	fclose(fp);
	cpuprof_free(c);
	out = run_cmd("google-pprof --text /bin/true %s 2>/dev/null", prof);
	CHECKF(top_pct(out, "JS:*hot") == 60.0 && top_pct(out, "JS:~warm") == 30.0 &&
		   top_pct(out, "Stub:cold") == 10.0,
	       "%s", out);
	free(out);
	if (access("tools/pprof", X_OK) == 0) {
		out = run_cmd("tools/pprof -top /bin/true %s 2>/dev/null", prof);
		CHECKF(top_pct(out, "JS:*hot") == 60.0 && top_pct(out, "Stub:cold") == 10.0, "%s",
		       out);
		free(out);
	}
	/* DWARF: a valid line table, the hot function's rows, and the reader
	 * that names legacy-file frames only through DWARF. */
	out = run_cmd("llvm-dwarfdump --verify %s 2>&1; llvm-dwarfdump --debug-line %s", so, so);
	CHECKF(strstr(out, "No errors.") && strstr(out, "/app/a.js") &&
		   strstr(out, "0x0000000000001190      3"),
	       "%s", out);
	free(out);
	if (system("go version >/dev/null 2>&1") == 0) {
		out = run_cmd("go tool pprof -top /bin/true %s 2>/dev/null", prof);
		CHECKF(top_pct(out, "JS:*hot") == 60.0 && top_pct(out, "Stub:cold") == 10.0, "%s",
		       out);
		free(out);
	}
	out = run_cmd("rm -rf %s", dir);
	free(out);
}

int main(void)
{
	if (system("google-pprof --help >/dev/null 2>&1") == 0)
		RUN_TEST(test_readers_name_jit_code);
	else
		SKIP_TEST(test_readers_name_jit_code, "google-pprof not installed");
	CHECK_EXIT();
}
