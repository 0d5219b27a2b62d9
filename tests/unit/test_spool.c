/* --push's spool files (formats/spool.c): a request encoded is decoded to
 * the same content type, path and body (an empty body, one holding the
 * header's own bytes); every cut of a file, and files whose header or
 * length lie, are refused; fields that could break an HTTP header are not
 * written. */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "formats/spool.h"

static char fields[2][SPOOL_FIELD_MAX + 1];

static void roundtrip(void)
{
	static const uint8_t body[] = "\n\nlength: 3\n\0binary\xff";
	struct spool_req in = {"application/x-protobuf", "/v1development/profiles", body,
			       sizeof(body)},
			 out;
	struct fmt_buf b = {0};

	CHECK(spool_encode(&in, &b) == 0);
	CHECK(spool_decode(b.p, b.n, &out, fields) == 0);
	CHECK(!strcmp(out.content_type, in.content_type));
	CHECK(!strcmp(out.path, in.path));
	CHECKF(out.len == in.len && !memcmp(out.body, body, in.len), "len %zu", out.len);
	free(b.p);
	/* An empty body, a path with a query. */
	b = (struct fmt_buf){0};
	in = (struct spool_req){"application/octet-stream", "/ingest?name=web&from=1&until=2", NULL,
				0};
	CHECK(spool_encode(&in, &b) == 0);
	CHECK(spool_decode(b.p, b.n, &out, fields) == 0 && out.len == 0);
	CHECK(!strcmp(out.path, in.path));
	free(b.p);
}

static void every_cut_refused(void)
{
	static const uint8_t body[] = "0123456789";
	struct spool_req in = {"text/plain", "/p", body, 10}, out;
	struct fmt_buf b = {0};
	size_t n;

	CHECK(spool_encode(&in, &b) == 0);
	/* Cut anywhere, or one byte more: not the file written. */
	for (n = 0; n < b.n; n++)
		CHECKF(spool_decode(b.p, n, &out, fields) == -EINVAL, "cut at %zu", n);
	CHECK(spool_encode(&in, &b) == 0); /* appended: trailing bytes */
	CHECK(spool_decode(b.p, b.n, &out, fields) == -EINVAL);
	free(b.p);
}

static void lies_refused(void)
{
	static const char *bad[] = {
	    "bpftrace-rec spool 2\ncontent-type: a\npath: /p\nlength: 1\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: \npath: /p\nlength: 1\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\x01\npath: /p\nlength: 1\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\npath: p\nlength: 1\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\npath: /p\r\nlength: 1\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\npath: /p\nlength: 2\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\npath: /p\nlength: -1\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\npath: /p\nlength: 01\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\npath: /p\nlength: 99999999999999999999\n\nx",
	    "bpftrace-rec spool 1\ncontent-type: a\npath: /p\nlength: 1\nx",
	    "bpftrace-rec spool 1\npath: /p\ncontent-type: a\nlength: 1\n\nx",
	};
	struct spool_req out;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECKF(spool_decode((const uint8_t *)bad[i], strlen(bad[i]), &out, fields) ==
			   -EINVAL,
		       "case %zu", i);
	CHECK(spool_decode((const uint8_t *)bad[0] + 0, 0, &out, fields) == -EINVAL);
	/* The good one they were made from. */
	CHECK(spool_decode((const uint8_t *)"bpftrace-rec spool 1\ncontent-type: a\npath: "
					    "/p\nlength: 1\n\nx",
			   58, &out, fields) == 0);
}

static void bad_fields_not_written(void)
{
	char longpath[SPOOL_FIELD_MAX + 2];
	struct fmt_buf b = {0};

	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = 0;
	CHECK(spool_encode(&(struct spool_req){"a\r\nX-Evil: 1", "/p", NULL, 0}, &b) == -EINVAL);
	CHECK(spool_encode(&(struct spool_req){"a", "/p\n", NULL, 0}, &b) == -EINVAL);
	CHECK(spool_encode(&(struct spool_req){"a", "p", NULL, 0}, &b) == -EINVAL);
	CHECK(spool_encode(&(struct spool_req){"a", longpath, NULL, 0}, &b) == -EINVAL);
	CHECK(spool_encode(&(struct spool_req){"", "/p", NULL, 0}, &b) == -EINVAL);
	CHECK(b.n == 0);
	free(b.p);
}

int main(void)
{
	RUN_TEST(roundtrip);
	RUN_TEST(every_cut_refused);
	RUN_TEST(lies_refused);
	RUN_TEST(bad_fields_not_written);
	CHECK_EXIT();
}
