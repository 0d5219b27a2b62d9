/* formats/stapsdt.c: probe notes as the assembler writes them, and
 * malformed ones (lengths past the section, strings without their NUL). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "formats/stapsdt.h"

struct buf {
	unsigned char b[512];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void pad4(struct buf *b)
{
	while (b->n % 4)
		b->b[b->n++] = 0;
}

/* One note: type, owner name, then the descriptor. */
static void note(struct buf *b, uint32_t type, const char *owner, const void *desc, uint32_t dsz)
{
	uint32_t nsz = strlen(owner) + 1;

	put(b, &nsz, 4);
	put(b, &dsz, 4);
	put(b, &type, 4);
	put(b, owner, nsz);
	pad4(b);
	put(b, desc, dsz);
	pad4(b);
}

static uint32_t probe_desc(unsigned char *d, uint64_t pc, uint64_t sem, const char *prov,
			   const char *name, const char *args)
{
	uint64_t base = 0x2000;
	size_t n = 0;

	memcpy(d, &pc, 8);
	memcpy(d + 8, &base, 8);
	memcpy(d + 16, &sem, 8);
	n = 24;
	memcpy(d + n, prov, strlen(prov) + 1);
	n += strlen(prov) + 1;
	memcpy(d + n, name, strlen(name) + 1);
	n += strlen(name) + 1;
	memcpy(d + n, args, strlen(args) + 1);
	return n + strlen(args) + 1;
}

struct seen {
	int n;
	char names[4][32];
	unsigned nargs[4];
	uint64_t sem[4];
};

static int collect(void *ctx, const struct stapsdt_probe *p)
{
	struct seen *s = ctx;

	if (s->n < 4) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s:%s", p->provider, p->name);
		s->nargs[s->n] = p->nargs;
		s->sem[s->n] = p->semaphore;
	}
	s->n++;
	return 0;
}

static void test_two_probes_and_other_notes(void)
{
	struct buf b = {0};
	unsigned char d[128];
	struct seen s = {0};
	uint32_t n;

	n = probe_desc(d, 0x1000, 0x4000, "python", "function__entry", "8@%rbp 8@%r12 -4@%eax");
	note(&b, 3, "stapsdt", d, n);
	note(&b, 1, "GNU", "abcd", 4); /* not a probe: skipped */
	n = probe_desc(d, 0x1100, 0, "postgresql", "query__done", "");
	note(&b, 3, "stapsdt", d, n);
	CHECK(stapsdt_parse(b.b, b.n, collect, &s) == 0);
	CHECK(s.n == 2);
	CHECK(!strcmp(s.names[0], "python:function__entry") && s.nargs[0] == 3 &&
	      s.sem[0] == 0x4000);
	CHECK(!strcmp(s.names[1], "postgresql:query__done") && s.nargs[1] == 0 && s.sem[1] == 0);
}

static void test_malformed(void)
{
	struct buf b = {0};
	unsigned char d[128];
	struct seen s = {0};
	uint32_t n, big = 1000;

	n = probe_desc(d, 0x1000, 0, "p", "a", "");
	note(&b, 3, "stapsdt", d, n);
	/* Cut inside the descriptor: an error, nothing read past the end. */
	CHECK(stapsdt_parse(b.b, b.n - 6, collect, &s) == -EINVAL);
	/* A descriptor size past the section. */
	memcpy(b.b + 4, &big, 4);
	s.n = 0;
	CHECK(stapsdt_parse(b.b, b.n, collect, &s) == -EINVAL && s.n == 0);
	/* A name without its NUL inside the descriptor. */
	b.n = 0;
	memset(d, 'x', sizeof(d));
	note(&b, 3, "stapsdt", d, 40);
	s.n = 0;
	CHECK(stapsdt_parse(b.b, b.n, collect, &s) == -EINVAL && s.n == 0);
	/* Too short for the three addresses. */
	b.n = 0;
	note(&b, 3, "stapsdt", d, 16);
	CHECK(stapsdt_parse(b.b, b.n, collect, &s) == -EINVAL);
	/* Trailing bytes shorter than a note header are ignored. */
	CHECK(stapsdt_parse(b.b, 8, collect, &s) == 0);
}

int main(void)
{
	RUN_TEST(test_two_probes_and_other_notes);
	RUN_TEST(test_malformed);
	return check_tests_failed != 0;
}
