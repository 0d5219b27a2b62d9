/* --push pyroscope=URL: see pyroscope.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "formats/pyroscope.h"
#include "user/pyroscope.h"
#include "user/util.h"

/* One window's requests on their way into the spool. */
struct putting {
	struct spool *sp;
	const char *path, *url;
	struct fmt_buf path_q, gz, form;
	size_t parts, dropped;
	uint64_t samples;
	int err; /* the first spool_put's error */
};

/* The profile gzipped, as every pprof profile travels. 0 or -ENOMEM. */
static int gzip_into(const void *p, size_t n, struct fmt_buf *out)
{
	z_stream z = {0};
	int r;

	out->n = 0;
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	if (fmt_grow((void **)&out->p, &out->cap, deflateBound(&z, n), 1)) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (unsigned char *)p;
	z.avail_in = (uInt)n;
	z.next_out = out->p;
	z.avail_out = (uInt)out->cap;
	r = deflate(&z, Z_FINISH);
	out->n = z.total_out;
	deflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -ENOMEM;
}

static int put_part(void *ctx, const struct pyro_part *p)
{
	struct putting *s = ctx;
	char ctype[128];
	int e = p->len > UINT32_MAX / 2 ? -EFBIG : gzip_into(p->profile, p->len, &s->gz);

	if (e)
		return e;
	s->path_q.n = s->form.n = 0;
	fmt_put(&s->path_q, s->path, strlen(s->path));
	fmt_put(&s->path_q, "?", 1);
	pyro_query(&s->path_q, p, "bpftrace-rec");
	fmt_put(&s->path_q, "", 1);
	pyro_form(&s->form, ctype, sizeof(ctype), p, s->gz.p, s->gz.n);
	if (s->path_q.err || s->form.err)
		return -ENOMEM;
	/* A part the spool refuses (full: said and counted by it) is one
	 * process's loss: the others go on. */
	e = spool_put(s->sp,
		      &(struct spool_req){ctype, (const char *)s->path_q.p, s->form.p, s->form.n});
	if (e) {
		s->dropped++;
		if (!s->err)
			s->err = e;
		return 0;
	}
	s->parts++;
	s->samples += (uint64_t)p->samples;
	return 0;
}

int pyroscope_put(struct spool *sp, const char *path, const char *url, const char *outdir,
		  const void *pb, size_t n, const struct pyro_meta *m)
{
	struct putting s = {.sp = sp, .path = path, .url = url};
	int e = pyro_split(pb, n, m, put_part, &s);

	if (e == -EINVAL)
		err("push %s: %s/profile.pb.gz: not a profile this tool wrote; nothing sent", url,
		    outdir);
	else if (e)
		err("push %s: %s; %zu process%s of the window spooled", url, strerror(-e), s.parts,
		    s.parts == 1 ? "" : "es");
	else
		debug("push %s: %" PRIu64 " samples of %zu process%s spooled%s", url, s.samples,
		      s.parts, s.parts == 1 ? "" : "es", s.dropped ? " (some dropped)" : "");
	free(s.path_q.p);
	free(s.gz.p);
	free(s.form.p);
	return e ? e : s.err;
}
