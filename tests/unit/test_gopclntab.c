/* formats/gopclntab.c on a real Go binary, built here by `go build` from
 * tests/workloads/gowork.go: the function, file and line of every
 * instruction of its main.* functions, as `go tool objdump` lists them. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "formats/gopclntab.h"
#include "testutil.h"

static char dir[] = "/tmp/test_gopclntab.XXXXXX", bin[128];

/* The .gopclntab section of path, copied into *buf. */
static int read_pclntab(const char *path, uint8_t **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	size_t shstr;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL)) || elf_getshdrstrndx(elf, &shstr))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, shstr, sh.sh_name)) ||
		    strcmp(n, ".gopclntab") || !(d = elf_getdata(scn, NULL)))
			continue;
		*buf = malloc(d->d_size);
		if (*buf) {
			memcpy(*buf, d->d_buf, d->d_size);
			*len = d->d_size;
			ret = 0;
		}
		break;
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Every instruction line of `go tool objdump -s ^main\.`:
 * "TEXT main.funcB(SB) /path/gowork.go", then "  gowork.go:29  0x45...". */
static void test_lines(void)
{
	char *out = run_cmd("GOCACHE=%s/cache go tool objdump -s '^main\\.' %s 2>&1", dir, bin);
	char func[256] = "", *line, *save = NULL;
	struct gopcln g;
	uint8_t *tab = NULL;
	size_t len = 0, n = 0, bad = 0;
	int seen_b = 0;

	CHECK(out != NULL);
	CHECK(read_pclntab(bin, &tab, &len) == 0);
	if (!out || !tab)
		goto out;
	CHECK(gopcln_open(&g, tab, len) == 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char file[256];
		const char *gf, *gfn;
		unsigned long long pc;
		int ln, gl;

		if (sscanf(line, "TEXT %255[^(]", func) == 1)
			continue;
		if (sscanf(line, " %255[^:]:%d 0x%llx", file, &ln, &pc) != 3)
			continue;
		n++;
		if (gopcln_lookup(&g, pc, &gfn, &gf, &gl) || strcmp(gfn, func) || gl != ln ||
		    strlen(gf) < strlen(file) || strcmp(gf + strlen(gf) - strlen(file), file)) {
			if (bad++ < 5)
				CHECKF(0, "%#llx: objdump %s %s:%d", pc, func, file, ln);
		}
		seen_b |= !strcmp(func, "main.funcB");
	}
	CHECKF(n > 20 && !bad, "%zu of %zu instructions differ", bad, n);
	CHECK(seen_b);
	/* Outside every function, and before the text. */
	{
		const char *a, *b;
		int l;

		CHECK(gopcln_lookup(&g, 0x1000, &a, &b, &l) == -ENOENT);
		CHECK(gopcln_lookup(&g, UINT64_MAX, &a, &b, &l) == -ENOENT);
	}
out:
	free(tab);
	free(out);
}

/* Headers of other layouts are refused, not misread. */
static void test_headers(void)
{
	uint8_t h[80] = {0};
	struct gopcln g;

	CHECK(gopcln_open(&g, h, sizeof(h)) == -EINVAL);
	memcpy(h, "\xfa\xff\xff\xff", 4); /* Go 1.16 */
	CHECK(gopcln_open(&g, h, sizeof(h)) == -ENOTSUP);
	memcpy(h, "\xf0\xff\xff\xff\x00\x00\x01\x08", 8);
	CHECK(gopcln_open(&g, h, 40) == -EINVAL); /* short */
	h[8] = 10;				  /* nfunc past the end */
	CHECK(gopcln_open(&g, h, sizeof(h)) == -EINVAL);
}

int main(void)
{
	char *out;

	RUN_TEST(test_headers);
	if (!mkdtemp(dir)) {
		SKIP_TEST(test_lines, "mkdtemp");
		CHECK_EXIT();
	}
	snprintf(bin, sizeof(bin), "%s/gowork", dir);
	out = run_cmd("command -v go >/dev/null && cd %s && GO111MODULE=off GOCACHE=%s/cache "
		      "go build -o %s %s/tests/workloads/gowork.go 2>&1 && echo ok",
		      dir, dir, bin, getenv("PWD") ? getenv("PWD") : ".");
	if (out && strstr(out, "ok\n"))
		RUN_TEST(test_lines);
	else
		SKIP_TEST(test_lines, "go build failed (golang-go: make deps)");
	free(out);
	free(run_cmd("rm -rf %s", dir));
	CHECK_EXIT();
}
