/* formats/gopclntab.c on real Go binaries, built here from
 * tests/workloads/gowork.go by two Gos, each by its path (not PATH's `go`):
 * Debian's 1.19, whose table's header holds the text start, and 1.26+
 * (/usr/local/go), whose header has 0 there. The function, file and line of
 * every instruction of its main.* functions, as that Go's own
 * `go tool objdump` lists them. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "formats/gopclntab.h"
#include "testutil.h"

static char dir[] = "/tmp/test_gopclntab.XXXXXX";

/* The .gopclntab section of path, copied into *buf, and the address of
 * .text (where runtime.text is in a program without cgo). */
static int read_pclntab(const char *path, uint8_t **buf, size_t *len, uint64_t *text)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	size_t shstr;

	*text = 0;
	elf_version(EV_CURRENT);
	if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL)) || elf_getshdrstrndx(elf, &shstr))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, shstr, sh.sh_name)))
			continue;
		if (!strcmp(n, ".text"))
			*text = sh.sh_addr;
		if (strcmp(n, ".gopclntab") || *buf || !(d = elf_getdata(scn, NULL)))
			continue;
		*buf = malloc(d->d_size);
		if (*buf) {
			memcpy(*buf, d->d_buf, d->d_size);
			*len = d->d_size;
		}
	}
	ret = *buf && *text ? 0 : -1;
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ret;
}

struct gobuild {
	const char *go;	  /* the toolchain, by its path */
	bool header_text; /* its table's header holds the text start */
	char bin[128];
};

struct rows {
	const struct gopcln *g;
	const char *go;
	size_t bad;
	int seen_b;
};

/* One instruction as that Go's objdump lists it: the same function, line
 * and file (objdump shows the base name). */
static void check_row(void *ctx, const char *func, const char *file, int ln, unsigned long long pc)
{
	struct rows *r = ctx;
	const char *gf, *gfn;
	int gl;

	if (gopcln_lookup(r->g, pc, &gfn, &gf, &gl) || strcmp(gfn, func) || gl != ln ||
	    !ends_with(gf, file)) {
		if (r->bad++ < 5)
			CHECKF(0, "%s: %#llx: objdump %s %s:%d", r->go, pc, func, file, ln);
	}
	r->seen_b |= !strcmp(func, "main.funcB");
}

/* Every instruction of its main.* functions. */
static void lines(const struct gobuild *b)
{
	char *out =
	    run_cmd("GOCACHE=%s %s tool objdump -s '^main\\.' %s 2>&1", go_cache(), b->go, b->bin);
	struct gopcln g;
	struct rows r = {.g = &g, .go = b->go};
	uint8_t *tab = NULL;
	size_t len = 0, n;
	uint64_t text, hdr_text;

	CHECK(out != NULL);
	CHECK(read_pclntab(b->bin, &tab, &len, &text) == 0);
	if (!out || !tab)
		goto out;
	/* The layout this build is here for: the header's word 3 (after
	 * magic and pads, nfunc, nfiles) is runtime.text, or 0 from Go 1.26. */
	memcpy(&hdr_text, tab + 24, 8);
	CHECKF(b->header_text ? hdr_text == text : hdr_text == 0,
	       "%s: text %#llx in the header, .text at %#llx", b->go, (unsigned long long)hdr_text,
	       (unsigned long long)text);
	CHECK(gopcln_open(&g, tab, len, text) == 0);
	CHECK(g.text_start == text);
	n = go_objdump_rows(out, check_row, &r);
	CHECKF(n > 20 && !r.bad, "%s: %zu of %zu instructions differ", b->go, r.bad, n);
	CHECK(r.seen_b);
	/* Outside every function, and before the text. */
	{
		const char *a, *f;
		int l;

		CHECK(gopcln_lookup(&g, 0x1000, &a, &f, &l) == -ENOENT);
		CHECK(gopcln_lookup(&g, UINT64_MAX, &a, &f, &l) == -ENOENT);
	}
out:
	free(tab);
	free(out);
}

/* Debian's Go (golang-go, make deps) and the newer one the machines have
 * first on PATH; GO119 and GO_NEW name others (as in the Makefile). */
static struct gobuild go119 = {.go = "/usr/lib/go-1.19/bin/go", .header_text = true};
static struct gobuild go_new = {.go = "/usr/local/go/bin/go", .header_text = false};

static void test_lines_go119(void)
{
	lines(&go119);
}

static void test_lines_go_new(void)
{
	lines(&go_new);
}

/* Builds gowork with b->go: 0, or -1 (why printed) when that Go is missing
 * or fails. */
static int build(struct gobuild *b, const char *name, const char *env)
{
	char *out;
	int ok;

	if (getenv(env) && *getenv(env))
		b->go = getenv(env);
	snprintf(b->bin, sizeof(b->bin), "%s/%s", dir, name);
	if (access(b->go, X_OK)) {
		fprintf(stderr, "%s: no %s\n", name, b->go);
		return -1;
	}
	out = run_cmd("cd %s && GO111MODULE=off GOCACHE=%s %s build -o %s "
		      "%s/tests/workloads/gowork.go 2>&1 && echo ok",
		      dir, go_cache(), b->go, b->bin, getenv("PWD") ? getenv("PWD") : ".");
	ok = out && strstr(out, "ok\n");
	if (!ok)
		fprintf(stderr, "%s: %s build failed: %s\n", name, b->go, out ? out : "");
	free(out);
	return ok ? 0 : -1;
}

/* Headers of other layouts are refused, not misread. */
static void test_headers(void)
{
	uint8_t h[80] = {0};
	struct gopcln g;

	CHECK(gopcln_open(&g, h, sizeof(h), 0x401000) == -EINVAL);
	memcpy(h, "\xfa\xff\xff\xff", 4); /* Go 1.16 */
	CHECK(gopcln_open(&g, h, sizeof(h), 0x401000) == -ENOTSUP);
	memcpy(h, "\xf0\xff\xff\xff\x00\x00\x01\x08", 8);
	CHECK(gopcln_open(&g, h, 40, 0x401000) == -EINVAL); /* short */
	h[8] = 10;					    /* nfunc past the end */
	CHECK(gopcln_open(&g, h, sizeof(h), 0x401000) == -EINVAL);
	/* No function, the table at 72: the header's text start, else (0, as
	 * Go 1.26 writes) the caller's. */
	memset(h, 0, sizeof(h));
	memcpy(h, "\xf1\xff\xff\xff\x00\x00\x01\x08", 8);
	h[8 + 8 * 7] = 72;
	CHECK(gopcln_open(&g, h, sizeof(h), 0x401000) == 0 && g.text_start == 0x401000);
	h[8 + 8 * 2 + 1] = 0x20; /* 0x2000 */
	CHECK(gopcln_open(&g, h, sizeof(h), 0x401000) == 0 && g.text_start == 0x2000);
}

int main(void)
{
	/* CI has both Gos: a missing one fails there, not skips. */
	bool ci = getenv("CI") && !strcmp(getenv("CI"), "true");

	RUN_TEST(test_headers);
	if (!mkdtemp(dir)) {
		SKIP_TEST(test_lines_go119, "mkdtemp");
		SKIP_TEST(test_lines_go_new, "mkdtemp");
		CHECK_EXIT();
	}
	if (!build(&go119, "gowork-go119", "GO119"))
		RUN_TEST(test_lines_go119);
	else if (ci)
		RUN_TEST(test_lines_go119); /* fails, naming the missing binary */
	else
		SKIP_TEST(test_lines_go119, "no Debian Go 1.19 (golang-go: make deps)");
	if (!build(&go_new, "gowork-go-new", "GO_NEW"))
		RUN_TEST(test_lines_go_new);
	else if (ci)
		RUN_TEST(test_lines_go_new);
	else
		SKIP_TEST(test_lines_go_new, "no Go 1.26+ at /usr/local/go (GO_NEW=)");
	free(run_cmd("rm -rf %s", dir));
	CHECK_EXIT();
}
