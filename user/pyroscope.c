/* --push pyroscope=URL: see pyroscope.h. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "formats/pyroscope.h"
#include "user/push_dest.h"
#include "user/pyroscope.h"
#include "user/sink.h"
#include "user/util.h"

struct pyro_sink {
	struct sink base;
	char *url; /* with /ingest */
	struct curl_slist *headers;
	const char *service_name;
};

/* One window's requests: one handle, so that they share a connection. */
struct sending {
	const struct pyro_sink *d;
	CURL *c;
	char errbuf[CURL_ERROR_SIZE];
	struct fmt_buf answer, url, gz;
	size_t parts, bytes;
	uint64_t samples;
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

static int send_part(void *ctx, const struct pyro_part *p)
{
	struct sending *s = ctx;
	char reason[512];
	curl_mime *mime;
	curl_mimepart *part;
	CURLcode cr;
	long code = 0;
	int e = p->len > UINT32_MAX / 2 ? -EFBIG : gzip_into(p->profile, p->len, &s->gz);

	if (e)
		return e;
	s->url.n = s->answer.n = 0;
	fmt_put(&s->url, s->d->url, strlen(s->d->url));
	fmt_put(&s->url, "?", 1);
	pyro_query(&s->url, p, "bpftrace-rec");
	fmt_put(&s->url, "", 1);
	if (s->url.err || !(mime = curl_mime_init(s->c)))
		return -ENOMEM;
	/* The form Pyroscope's pprof ingestion reads: the profile, and the
	 * configuration of its sample types. */
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "profile");
	curl_mime_filename(part, "profile.pprof");
	curl_mime_data(part, (const char *)s->gz.p, s->gz.n);
	part = curl_mime_addpart(mime);
	curl_mime_name(part, "sample_type_config");
	curl_mime_filename(part, "sample_type_config.json");
	curl_mime_data(part, p->type_config, CURL_ZERO_TERMINATED);
	curl_easy_setopt(s->c, CURLOPT_URL, (const char *)s->url.p);
	curl_easy_setopt(s->c, CURLOPT_MIMEPOST, mime);
	cr = curl_easy_perform(s->c);
	curl_easy_setopt(s->c, CURLOPT_MIMEPOST, NULL);
	curl_mime_free(mime);
	if (cr == CURLE_OK)
		curl_easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &code);
	if (cr != CURLE_OK) {
		err("push %s: %s; the recording is in the output directory, not sent", s->d->url,
		    s->errbuf[0] ? s->errbuf : curl_easy_strerror(cr));
		return -EIO;
	}
	if (code < 200 || code > 299) {
		push_answer_reason(s->c, &s->answer, reason, sizeof(reason));
		err("push %s: HTTP %ld%s%s; the recording is in the output directory, not sent",
		    s->d->url, code, reason[0] ? ": " : "", reason);
		return code >= 400 && code < 500 ? -EACCES : -EIO;
	}
	s->parts++;
	s->bytes += s->gz.n;
	s->samples += (uint64_t)p->samples;
	return 0;
}

/* A window to one Pyroscope: its profile.pb.gz, a request per process. */
static int pyro_emit(struct sink *k, const struct window *w)
{
	const struct pyro_sink *d = (const struct pyro_sink *)k;
	const struct run_info *ri = w->ri;
	struct sending s = {.d = d};
	struct fmt_buf pb = {0};
	struct push_procs pp;
	int e;

	if ((e = push_read_profile(ri, &pb))) {
		err("push %s: %s/profile.pb.gz: %s; nothing sent", d->url, ri->outdir,
		    strerror(-e));
		free(pb.p);
		return e;
	}
	e = push_procs_of(ri, &pp);
	if (!e && !(s.c = push_curl(d->url, d->headers, &s.answer, s.errbuf)))
		e = -ENOMEM;
	if (!e) {
		struct pyro_meta m = {pp.host[0] ? pp.host : NULL, d->service_name, pp.v, pp.n};

		e = pyro_split(pb.p, pb.n, &m, send_part, &s);
		if (e == -EINVAL)
			err("push %s: %s/profile.pb.gz: not a profile this tool wrote; nothing "
			    "sent",
			    d->url, ri->outdir);
		else if (e == -ENOMEM)
			err("push %s: %s", d->url, strerror(ENOMEM));
	}
	if (!e)
		info("pushed %" PRIu64 " samples of %zu process%s (%zu bytes) to %s", s.samples,
		     s.parts, s.parts == 1 ? "" : "es", s.bytes, d->url);
	if (s.c)
		curl_easy_cleanup(s.c);
	push_procs_free(&pp);
	free(s.answer.p);
	free(s.url.p);
	free(s.gz.p);
	free(pb.p);
	return e;
}

static void pyro_free(struct sink *k)
{
	struct pyro_sink *d = (struct pyro_sink *)k;

	curl_slist_free_all(d->headers);
	free(d->url);
	free(d);
}

static const struct sink_ops pyro_ops = {"pyroscope", pyro_emit, pyro_free};

struct sink *pyroscope_sink_new(const char *spec, const struct push_config *c,
				const struct curl_slist *creds)
{
	struct pyro_sink *d = calloc(1, sizeof(*d));
	const struct curl_slist *h;

	if (!d || !(d->url = push_dest_url(spec, "pyroscope", "/ingest"))) {
		if (!d)
			err("--push %s: %s", spec, strerror(ENOMEM));
		free(d);
		return NULL;
	}
	/* The query is this sink's to write. */
	if (strpbrk(d->url, "?#")) {
		err("--push %s: a Pyroscope URL takes no query or fragment", spec);
		pyro_free(&d->base);
		return NULL;
	}
	d->base.ops = &pyro_ops;
	d->service_name = c->service_name;
	for (h = creds; h; h = h->next) {
		struct curl_slist *l = curl_slist_append(d->headers, h->data);

		if (!l) {
			err("--push %s: %s", spec, strerror(ENOMEM));
			pyro_free(&d->base);
			return NULL;
		}
		d->headers = l;
	}
	return &d->base;
}
