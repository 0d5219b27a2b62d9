/* --push's spooled requests: see spool.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "formats/spool.h"

#define MAGIC "bpftrace-rec spool 1\n"

/* A header value: printable ASCII (no CR or LF to end the line early, no
 * control character to reach an HTTP header), 1 to SPOOL_FIELD_MAX bytes. */
static bool field_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > SPOOL_FIELD_MAX)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

int spool_encode(const struct spool_req *r, struct fmt_buf *out)
{
	char len[48];

	if (!r->content_type || !r->path || !field_ok(r->content_type, strlen(r->content_type)) ||
	    !field_ok(r->path, strlen(r->path)) || r->path[0] != '/')
		return -EINVAL;
	snprintf(len, sizeof(len), "length: %zu\n\n", r->len);
	fmt_put(out, MAGIC, strlen(MAGIC));
	fmt_put(out, "content-type: ", 14);
	fmt_put(out, r->content_type, strlen(r->content_type));
	fmt_put(out, "\npath: ", 7);
	fmt_put(out, r->path, strlen(r->path));
	fmt_put(out, "\n", 1);
	fmt_put(out, len, strlen(len));
	fmt_put(out, r->body, r->len);
	return out->err;
}

/* "NAME: value\n" at *p (before end): the value copied into dst. */
static bool take_field(const uint8_t **p, const uint8_t *end, const char *name, char *dst)
{
	size_t nl = strlen(name);
	const uint8_t *v = *p + nl, *eol;

	if ((size_t)(end - *p) <= nl || memcmp(*p, name, nl))
		return false;
	eol = memchr(v, '\n', end - v);
	if (!eol || !field_ok((const char *)v, eol - v))
		return false;
	memcpy(dst, v, eol - v);
	dst[eol - v] = 0;
	*p = eol + 1;
	return true;
}

int spool_decode(const uint8_t *buf, size_t len, struct spool_req *r,
		 char fields[2][SPOOL_FIELD_MAX + 1])
{
	const uint8_t *p = buf, *end = buf + len;
	char num[32];
	uint64_t n = 0;
	size_t i;

	if (len < strlen(MAGIC) || memcmp(buf, MAGIC, strlen(MAGIC)))
		return -EINVAL;
	p += strlen(MAGIC);
	if (!take_field(&p, end, "content-type: ", fields[0]) ||
	    !take_field(&p, end, "path: ", fields[1]) || fields[1][0] != '/')
		return -EINVAL;
	/* "length: N\n\n": digits only, no sign, no leading space. */
	if ((size_t)(end - p) < 8 || memcmp(p, "length: ", 8))
		return -EINVAL;
	p += 8;
	for (i = 0; p + i < end && p[i] >= '0' && p[i] <= '9' && i < sizeof(num) - 1; i++)
		num[i] = (char)p[i];
	num[i] = 0;
	if (!i || i > 19 || (i > 1 && num[0] == '0'))
		return -EINVAL;
	n = strtoull(num, NULL, 10);
	p += i;
	if ((size_t)(end - p) < 2 || p[0] != '\n' || p[1] != '\n')
		return -EINVAL;
	p += 2;
	if ((uint64_t)(end - p) != n)
		return -EINVAL;
	*r = (struct spool_req){fields[0], fields[1], p, (size_t)n};
	return 0;
}
