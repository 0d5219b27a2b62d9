#include <errno.h>
#include <string.h>
#include "formats/stapsdt.h"

#define NT_STAPSDT 3

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The next NUL-terminated string of [*p, end), or NULL. */
static const char *next_str(const unsigned char **p, const unsigned char *end)
{
	const unsigned char *s = *p, *z = memchr(s, 0, end - s);

	if (!z)
		return NULL;
	*p = z + 1;
	return (const char *)s;
}

static unsigned count_args(const char *a)
{
	unsigned n = 0;
	int in = 0;

	for (; *a; a++) {
		if (*a == ' ')
			in = 0;
		else if (!in++)
			n++;
	}
	return n;
}

int stapsdt_parse(const void *sec, size_t len, stapsdt_fn fn, void *ctx)
{
	const unsigned char *p = sec, *end = p + len;

	while ((size_t)(end - p) >= 12) {
		uint32_t namesz = rd32(p), descsz = rd32(p + 4), type = rd32(p + 8);
		size_t name_pad = ((size_t)namesz + 3) & ~(size_t)3,
		       desc_pad = ((size_t)descsz + 3) & ~(size_t)3;
		const unsigned char *name = p + 12, *desc = name + name_pad, *d, *dend;
		struct stapsdt_probe pr;
		int ret;

		if (name_pad > (size_t)(end - name) || desc_pad > (size_t)(end - desc) ||
		    descsz > (size_t)(end - desc))
			return -EINVAL;
		p = desc + desc_pad;
		if (type != NT_STAPSDT || namesz != 8 || memcmp(name, "stapsdt", 8))
			continue;
		if (descsz < 3 * 8)
			return -EINVAL;
		pr.pc = rd64(desc);
		pr.base = rd64(desc + 8);
		pr.semaphore = rd64(desc + 16);
		d = desc + 24;
		dend = desc + descsz;
		if (!(pr.provider = next_str(&d, dend)) || !(pr.name = next_str(&d, dend)))
			return -EINVAL;
		/* The arguments' string may be missing (a probe without). */
		if (d >= dend || !(pr.args = next_str(&d, dend)))
			pr.args = "";
		pr.nargs = count_args(pr.args);
		if ((ret = fn(ctx, &pr)))
			return ret;
	}
	return 0;
}
