/* --push: see push.h. */
#include <ctype.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>
#include "formats/otlp.h"
#include "user/outdir.h"
#include "user/proc.h"
#include "user/push.h"
#include "user/pyroscope.h"
#include "user/sink.h"
#include "user/spool.h"
#include "user/util.h"

#define OTLP_PROFILES_PATH "/v1development/profiles"
/* What is read of an answer: enough for any error message. */
#define ANSWER_MAX (64 << 10)
/* The decompressed profile: far above any run's, far below memory's end. */
#define PROFILE_MAX (1ULL << 32)
/* At the stop, what is in the spool is tried once more for this long (an
 * answer still awaited then is given up: the window stays spooled). */
#define STOP_GRACE_NS	  (10 * 1000000000ULL)
#define OTLP_CONTENT_TYPE "application/x-protobuf"

/* What the recorder still holds of the processes: each one's program path
 * and, for those still running, its container; and the host's name ("":
 * unknown). */
struct push_procs {
	struct otlp_process *v;
	char (*ids)[65]; /* the container ids v points to */
	size_t n;
	char host[sizeof(((struct utsname *)0)->nodename)];
};

/* libcurl, loaded when --push is given: linked, it and the ~30 libraries it
 * needs (TLS, Kerberos, LDAP, SSH...) cost every run ~6 MiB of RSS, pushing
 * or not (a tenth of --off-cpu -a's budget, issue 22). Only what push.c
 * calls; the types and constants are libcurl's own header's. */
struct curl_api {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

/* Fills api from libcurl.so.4 (libcurl4, with OpenSSL, as Debian builds
 * it), said on failure. The library stays loaded for the rest of the run:
 * OpenSSL, under it, pins itself against unloading anyway. 0 or -ENOENT. */
static int curl_api_load(struct curl_api *api)
{
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
#define FN(f, m) {#f, offsetof(struct curl_api, m)}
	    FN(curl_global_init, global_init),	 FN(curl_global_cleanup, global_cleanup),
	    FN(curl_easy_init, easy_init),	 FN(curl_easy_setopt, easy_setopt),
	    FN(curl_easy_perform, easy_perform), FN(curl_easy_getinfo, easy_getinfo),
	    FN(curl_easy_cleanup, easy_cleanup), FN(curl_easy_strerror, easy_strerror),
	    FN(curl_slist_append, slist_append), FN(curl_slist_free_all, slist_free_all),
#undef FN
	};
	void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (!lib) {
		err("--push: libcurl could not be loaded (%s): install libcurl4", dlerror());
		return -ENOENT;
	}
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *f = dlsym(lib, fns[i].name);

		if (!f) {
			err("--push: libcurl.so.4 has no %s: a libcurl older than 7.85 or not "
			    "libcurl",
			    fns[i].name);
			return -ENOENT;
		}
		/* POSIX's way to a function pointer from dlsym's void *. */
		memcpy((char *)api + fns[i].off, &f, sizeof(f));
	}
	return 0;
}

/* What the destinations share: libcurl, the credentials, the names; freed
 * with the last of their sinks. */
struct push {
	struct curl_api curl;
	struct curl_slist *headers; /* credentials */
	bool has_credentials;
	const char *service_name, *version;
	int refs;
};

struct push_sink;
struct push_procs;
struct push_kind {
	const char *name;	  /* --push's KIND=URL; the spool directory's prefix */
	const char *default_path; /* what an URL without a path gets */
	bool query_ok;		  /* may the URL hold a query */
	bool otlp_answer;	  /* a 2xx answer is OTLP's, that says what it took */
	const struct sink_ops *ops;
	/* A window's profile (pb, uncompressed) as the kind's requests into
	 * d's spool: 0 or -errno, said. */
	int (*put)(const struct push_sink *d, const char *outdir, const struct fmt_buf *pb,
		   const struct push_procs *pp);
};

/* A destination: one sink, and its spool (user/spool.h). */
struct push_sink {
	struct sink base;
	const struct push_kind *kind;
	struct push *push;
	char *url;	  /* with the OTLP path: for messages */
	char *origin;	  /* scheme://host[:port], that a spooled path goes after */
	const char *path; /* in url: the OTLP path (and query) */
	struct spool *spool;
	int finished; /* finish's result + 1; 0: not yet */
};

/* A header line "Name: value": a token name, a value with no control
 * character (CR and LF would start another header). */
static bool header_ok(const char *h)
{
	const char *colon = strchr(h, ':'), *p;

	if (!colon || colon == h)
		return false;
	for (p = h; p < colon; p++)
		if (!isalnum((unsigned char)*p) && !strchr("!#$%&'*+-.^_`|~", *p))
			return false;
	for (p = colon + 1; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return false;
	return true;
}

static int add_header(struct push *p, const char *h, const char *from)
{
	struct curl_slist *l;

	if (!header_ok(h)) {
		err("%s: not a header line \"Name: value\"", from);
		return -EINVAL;
	}
	if (!(l = p->curl.slist_append(p->headers, h)))
		return -ENOMEM;
	p->headers = l;
	p->has_credentials = true;
	return 0;
}

/* --push-headers FILE: a "Name: value" line each; blank lines and # comments
 * skipped. A file others can read is refused: it holds credentials. */
static int read_headers_file(struct push *p, const char *path)
{
	char *buf = NULL, *line, *save = NULL;
	struct stat st = {0};
	size_t len;
	int fd = open_regular(path, O_NOFOLLOW), e = 0;

	if (fd < 0) {
		err("--push-headers %s: %s", path, strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st) || (st.st_mode & 077)) {
		e = (st.st_mode & 077) ? -EPERM : -errno;
		err("--push-headers %s: %s", path,
		    e == -EPERM ? "readable by others (chmod 600 it): it holds credentials"
				: strerror(-e));
		close(fd);
		return e;
	}
	e = read_fd_all(fd, 64 << 10, &buf, &len);
	close(fd);
	if (e) {
		err("--push-headers %s: %s", path, strerror(-e));
		return e;
	}
	for (line = strtok_r(buf, "\n", &save); line && !e; line = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(line);

		if (n && line[n - 1] == '\r')
			line[--n] = 0;
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line && *line != '#')
			e = add_header(p, line, path);
	}
	free(buf);
	return e;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* OTEL_EXPORTER_OTLP_[PROFILES_]HEADERS: "key=value,key2=value2", values
 * percent-encoded (the OpenTelemetry exporters' convention). */
static int read_headers_env(struct push *p)
{
	const char *name = "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", *v = getenv(name);
	char *copy, *item, *save = NULL;
	int e = 0;

	if (!v || !*v) {
		name = "OTEL_EXPORTER_OTLP_HEADERS";
		v = getenv(name);
	}
	if (!v || !*v)
		return 0;
	copy = xstrdup(v);
	for (item = strtok_r(copy, ",", &save); item && !e; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), line[4096], *o = line;
		const char *s;

		if (!eq) {
			err("%s: an entry is not key=value", name);
			e = -EINVAL;
			break;
		}
		*eq = 0;
		while (*item == ' ')
			item++;
		o += snprintf(line, sizeof(line) - 8, "%.1024s: ", item);
		for (s = eq + 1; *s && o < line + sizeof(line) - 1; s++) {
			if (*s == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
				*o++ = (char)(hexval(s[1]) << 4 | hexval(s[2]));
				s += 2;
			} else {
				*o++ = *s;
			}
		}
		*o = 0;
		e = add_header(p, line, name);
	}
	free(copy);
	return e;
}

/* No space, control character, quote or backslash: none is a URL's
 * (RFC 3986), and the URL goes into summary.json's strings as it is. */
static bool url_chars_ok(const char *url)
{
	for (; *url; url++)
		if ((unsigned char)*url <= ' ' || (unsigned char)*url >= 0x7f || *url == '"' ||
		    *url == '\\')
			return false;
	return true;
}

/* "KIND=URL": http or https with a host; an URL with no path gets path
 * (OTLP's profiles path, as OTEL_EXPORTER_OTLP_ENDPOINT does, or
 * Pyroscope's /ingest). The URL to post to (malloc'ed), or NULL after an
 * error naming spec. */
static char *dest_url(const char *spec, const char *kind, const char *path)
{
	size_t klen = strlen(kind), n, cap;
	const char *url = spec + klen + 1, *host, *slash;
	char *out;

	if (strncmp(spec, kind, klen) || spec[klen] != '=') {
		err("--push %s: expected %s=URL", spec, kind);
		return NULL;
	}
	if (!strncmp(url, "http://", 7))
		host = url + 7;
	else if (!strncmp(url, "https://", 8))
		host = url + 8;
	else {
		err("--push %s: the URL must start with http:// or https://", spec);
		return NULL;
	}
	n = strlen(url);
	if (!*host || *host == '/' || n > 2048 || !url_chars_ok(url)) {
		err("--push %s: not a URL with a host", spec);
		return NULL;
	}
	slash = strchr(host, '/');
	cap = n + strlen(path) + 1;
	if ((out = malloc(cap)))
		snprintf(out, cap, "%.*s%s",
			 (int)(slash && slash[1] ? n
			       : slash		 ? n - 1
						 : n),
			 url, slash && slash[1] ? "" : path);
	return out;
}

static bool loopback(const char *spec)
{
	const char *h = strstr(spec, "://");

	if (!h)
		return false;
	h += 3;
	return !strncmp(h, "127.", 4) || !strncmp(h, "localhost", 9) || !strncmp(h, "[::1]", 5);
}

static void push_unref(struct push *p)
{
	if (!p || --p->refs)
		return;
	p->curl.slist_free_all(p->headers);
	p->curl.global_cleanup();
	free(p);
}

/* profile.pb.gz as written, decompressed, read relative to the output
 * directory opened at the start (never by path), appended to b. 0 or
 * -errno. */
static int read_profile(const struct run_info *ri, struct fmt_buf *b)
{
	int fd = openat(ri->out->fd, "profile.pb.gz", O_RDONLY | O_NOFOLLOW | O_CLOEXEC), r, e = 0;
	gzFile z;

	if (fd < 0)
		return -errno;
	if (!(z = gzdopen(fd, "rb"))) {
		close(fd);
		return -ENOMEM;
	}
	do {
		if (b->n + 65536 > PROFILE_MAX)
			e = -EFBIG;
		else if (fmt_grow((void **)&b->p, &b->cap, b->n + 65536, 1))
			e = -ENOMEM;
		if (e)
			break;
		errno = 0;
		r = gzread(z, b->p + b->n, 65536);
		if (r > 0)
			b->n += r;
		else if (r < 0)
			e = errno ? -errno : -EIO; /* a gzip error: zlib sets no errno */
	} while (r > 0);
	gzclose(z);
	return e;
}

/* /proc/PID/cgroup's container id, into id; false when there is none. */
static bool container_of(pid_t pid, char id[65])
{
	char path[64], *buf = NULL;
	size_t len;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (read_path_all(path, 0, 1 << 16, &buf, &len))
		return false;
	ok = otlp_container_id(buf, len, id);
	free(buf);
	return ok;
}

static size_t keep_answer(char *data, size_t size, size_t n, void *ctx)
{
	struct fmt_buf *b = ctx;
	size_t len = size * n;

	if (b->n < ANSWER_MAX)
		fmt_put(b, data, len < ANSWER_MAX - b->n ? len : ANSWER_MAX - b->n);
	return len;
}

/* The server's reason in an error answer (c's, body): google.rpc.Status's
 * message in a protobuf answer, else the body's first line, sanitized. */
static void answer_reason(const struct curl_api *api, CURL *c, const struct fmt_buf *body,
			  char *out, size_t cap)
{
	char *type = NULL;
	size_t n;

	out[0] = 0;
	api->easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
	if (type && strstr(type, "protobuf") && !otlp_decode_status(body->p, body->n, out, cap) &&
	    out[0])
		return;
	/* One line: the first, without its end. The body is not NUL-terminated
	 * (strcspn read past its end when it had no line end). */
	for (n = 0; n < body->n && body->p[n] != '\r' && body->p[n] != '\n'; n++)
		;
	fmt_sanitize(out, cap, body->n ? (const char *)body->p : "", n);
}

/* An easy handle for url with the push's options (the certificate
 * verified, no redirect): the answer's body kept in answer (its first 64
 * KiB), libcurl's reason in errbuf. NULL on ENOMEM. */
static CURL *curl_for(const struct curl_api *api, const char *url, const struct curl_slist *headers,
		      struct fmt_buf *answer, char errbuf[CURL_ERROR_SIZE])
{
	CURL *c = api->easy_init();

	if (!c)
		return NULL;
	errbuf[0] = 0;
	api->easy_setopt(c, CURLOPT_URL, url);
	api->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	api->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	api->easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	api->easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	api->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	api->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	api->easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	api->easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	api->easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer);
	api->easy_setopt(c, CURLOPT_WRITEDATA, answer);
	api->easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	api->easy_setopt(c, CURLOPT_USERAGENT, "bpftrace-rec");
	return c;
}

/* The spool's sender: the deadline of a stop, checked as the transfer
 * goes. */
static int past_deadline(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const volatile uint64_t *deadline = ctx;

	(void)dt, (void)dn, (void)ut, (void)un;
	return *deadline && now_ns(CLOCK_MONOTONIC) > *deadline;
}

/* A spooled window to the destination (the spool's thread): 2xx sent,
 * 408, 429, 5xx and no answer tried again later, any other status refused
 * for good, with the server's reason. */
static enum spool_result send_one(void *ctx, const struct spool_req *r,
				  const volatile uint64_t *deadline_ns)
{
	const struct push_sink *d = ctx;
	const struct curl_api *api = &d->push->curl;
	char errbuf[CURL_ERROR_SIZE] = "", reason[512], *url = NULL, ctype[SPOOL_FIELD_MAX + 16];
	struct fmt_buf answer = {0};
	struct curl_slist *h = NULL, *l;
	enum spool_result res = SPOOL_RETRY;
	CURL *c = NULL;
	size_t n;
	CURLcode cr;
	long code = 0;

	n = strlen(d->origin) + strlen(r->path) + 1;
	if ((url = malloc(n)))
		snprintf(url, n, "%s%s", d->origin, r->path);
	/* The credentials, then this request's Content-Type. */
	snprintf(ctype, sizeof(ctype), "Content-Type: %s", r->content_type);
	for (l = d->push->headers; url && l; l = l->next)
		if (!(h = api->slist_append(h, l->data)))
			break;
	if (!url || (d->push->headers && !h) || !(l = api->slist_append(h, ctype)) ||
	    !(c = curl_for(api, url, (h = l), &answer, errbuf))) {
		warn("push %s: out of memory; tried again later", d->url);
		api->slist_free_all(h);
		free(url);
		return SPOOL_RETRY;
	}
	api->easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
	api->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	api->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	api->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, past_deadline);
	api->easy_setopt(c, CURLOPT_XFERINFODATA, (void *)deadline_ns);
	cr = api->easy_perform(c);
	if (cr == CURLE_OK)
		api->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (cr != CURLE_OK) {
		/* Said once per outage by the spool; each try's reason here. */
		if (cr == CURLE_ABORTED_BY_CALLBACK)
			snprintf(errbuf, sizeof(errbuf), "no answer before the stop's grace ended");
		warn("push %s: %s; the window stays in the spool", d->url,
		     errbuf[0] ? errbuf : api->easy_strerror(cr));
	} else if (code < 200 || code > 299) {
		answer_reason(api, c, &answer, reason, sizeof(reason));
		if (code == 408 || code == 429 || code >= 500) {
			warn("push %s: HTTP %ld%s%s; the window stays in the spool", d->url, code,
			     reason[0] ? ": " : "", reason);
		} else {
			err("push %s: HTTP %ld%s%s; the window is dropped, not retried "
			    "(its files are in the output directory)",
			    d->url, code, reason[0] ? ": " : "", reason);
			res = SPOOL_REJECTED;
		}
	} else {
		int64_t rejected = 0;

		if (!d->kind->otlp_answer)
			; /* Pyroscope's 200 says nothing more */
		else if (otlp_decode_response(answer.p, answer.n, &rejected, reason,
					      sizeof(reason)))
			warn("push %s: HTTP %ld with an answer that is not OTLP's", d->url, code);
		else if (rejected || reason[0])
			warn("push %s: the receiver rejected %" PRId64 " profiles%s%s", d->url,
			     rejected, reason[0] ? ": " : "", reason);
		debug("push %s: sent %zu bytes", d->url, r->len);
		res = SPOOL_SENT;
	}
	free(answer.p);
	free(url);
	api->slist_free_all(h);
	api->easy_cleanup(c);
	return res;
}

static void dest_procs_free(struct push_procs *pp)
{
	free(pp->v);
	free(pp->ids);
}

/* 0 or -ENOMEM (pp empty: dest_procs_free may be called either way). */
static int dest_procs_of(const struct run_info *ri, struct push_procs *pp)
{
	struct utsname u;
	size_t i, n = ri->procs->v.n;

	memset(pp, 0, sizeof(*pp));
	if (!uname(&u))
		snprintf(pp->host, sizeof(pp->host), "%s", u.nodename);
	/* What the processes still held say of themselves: their program's
	 * path, and the container of those still running (an exited one's
	 * pid may be another's now). */
	pp->v = calloc(n ? n : 1, sizeof(*pp->v));
	pp->ids = calloc(n ? n : 1, sizeof(*pp->ids));
	if (!pp->v || !pp->ids) {
		dest_procs_free(pp);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct proc *pr = ri->procs->v.v[i];

		pp->v[pp->n].pid = pr->pid;
		pp->v[pp->n].exe_path = pr->exe;
		if (!pr->exited && container_of(pr->pid, pp->ids[pp->n]))
			pp->v[pp->n].container_id = pp->ids[pp->n];
		pp->n++;
	}
	return 0;
}

/* A window as OTLP: one request. Says what went wrong. */
static int otlp_put(const struct push_sink *d, const char *outdir, const struct fmt_buf *pb,
		    const struct push_procs *pp)
{
	struct otlp_meta m = {pp->host[0] ? pp->host : NULL, d->push->service_name,
			      d->push->version, pp->v, pp->n};
	struct fmt_buf req = {0};
	struct otlp_stats st;
	int e = otlp_from_pprof(pb->p, pb->n, &m, &req, &st);

	if (e)
		err("push %s: %s/profile.pb.gz: %s; nothing sent", d->url, outdir,
		    e == -EINVAL ? "not a profile this tool wrote" : strerror(-e));
	else
		e = spool_put(d->spool,
			      &(struct spool_req){OTLP_CONTENT_TYPE, d->path, req.p, req.n});
	free(req.p);
	return e;
}

/* A window as Pyroscope's: a request per process (user/pyroscope.h). */
static int pyro_put(const struct push_sink *d, const char *outdir, const struct fmt_buf *pb,
		    const struct push_procs *pp)
{
	struct pyro_meta m = {pp->host[0] ? pp->host : NULL, d->push->service_name, pp->v, pp->n};

	return pyroscope_put(d->spool, d->path, d->url, outdir, pb->p, pb->n, &m);
}

/* A window to one destination: its profile.pb.gz, as the kind's requests
 * into the spool. */
static int push_emit(struct sink *k, const struct window *w)
{
	const struct push_sink *d = (const struct push_sink *)k;
	const struct run_info *ri = w->ri;
	struct fmt_buf pb = {0};
	struct push_procs pp = {0};
	int e;

	if ((e = read_profile(ri, &pb)))
		err("push %s: %s/profile.pb.gz: %s; nothing sent", d->url, ri->outdir,
		    strerror(-e));
	else if ((e = dest_procs_of(ri, &pp)))
		err("push %s: %s; nothing sent", d->url, strerror(-e));
	else
		e = d->kind->put(d, ri->outdir, &pb, &pp);
	dest_procs_free(&pp);
	free(pb.p);
	return e;
}

/* After the last window: the spool tried once more, then closed. */
static int push_finish(struct sink *k)
{
	struct push_sink *d = (struct push_sink *)k;

	if (!d->finished) {
		d->finished = spool_close(d->spool, STOP_GRACE_NS) + 1;
		d->spool = NULL;
	}
	return d->finished - 1;
}

static void push_json(struct sink *k, FILE *f)
{
	struct push_sink *d = (struct push_sink *)k;
	struct spool_stats st = {0};

	if (d->spool)
		spool_get_stats(d->spool, &st);
	fprintf(f,
		"{\"url\": \"%s\", \"sent\": %" PRIu64 ", \"retries\": %" PRIu64
		", \"spooled\": %" PRIu64 ", \"spooled_bytes\": %" PRIu64
		", \"found_at_start\": %" PRIu64 ", \"dropped_spool_full\": %" PRIu64
		", \"dropped_rejected\": %" PRIu64 ", \"dropped_unreadable\": %" PRIu64 "}",
		d->url, st.sent, st.retries, st.queued, st.queued_bytes, st.found, st.dropped_full,
		st.dropped_rejected, st.dropped_unreadable);
}

static void push_sink_free(struct sink *k)
{
	struct push_sink *d = (struct push_sink *)k;

	push_finish(k);
	push_unref(d->push);
	free(d->url);
	free(d->origin);
	free(d);
}

static const struct sink_ops otlp_ops = {"otlp", push_emit, push_finish, push_json, push_sink_free};
static const struct sink_ops pyro_ops = {"pyroscope", push_emit, push_finish, push_json,
					 push_sink_free};

/* The kinds of destination: each builds a window's requests, and the spool
 * sends them alike. */
static const struct push_kind kinds[] = {
    {"otlp", OTLP_PROFILES_PATH, true, true, &otlp_ops, otlp_put},
    /* The query is this kind's to write. */
    {"pyroscope", "/ingest", false, false, &pyro_ops, pyro_put},
};

/* The spool's directory name: the kind, host and port, and a hash of the
 * whole URL (two paths on one host are two spools), the same at every
 * start, so that a restart finds its windows. */
static void spool_name(const struct push_sink *d, char *out, size_t cap)
{
	const char *h = strstr(d->url, "://") + 3;
	size_t i, o = 0;

	o = (size_t)snprintf(out, cap, "%s-", d->kind->name);
	for (i = 0; h + i < d->path && o + 1 < cap && i < 64; i++)
		out[o++] = isalnum((unsigned char)h[i]) || h[i] == '.' || h[i] == '-' ? h[i] : '_';
	snprintf(out + o, cap - o, "-%08" PRIx64, hash_bytes(d->url, strlen(d->url)) & 0xffffffffu);
}

int push_sinks_add(const struct push_config *c, struct sinks *sinks)
{
	struct push *p;
	int i, e = 0;

	if (!c->ndests)
		return 0;
	if (!(p = calloc(1, sizeof(*p))))
		return -ENOMEM;
	if (curl_api_load(&p->curl)) {
		free(p);
		return -ENOENT;
	}
	if (p->curl.global_init(CURL_GLOBAL_DEFAULT)) {
		err("--push: libcurl could not start");
		free(p);
		return -ENOMEM;
	}
	p->refs = 1; /* this function's, dropped at its end */
	p->service_name = c->service_name;
	p->version = c->version;
	e = c->headers_file ? read_headers_file(p, c->headers_file) : read_headers_env(p);
	for (i = 0; i < c->ndests && !e; i++) {
		const char *spec = c->dests[i];
		const struct push_kind *kind = NULL;
		struct push_sink *d;
		char name[128];
		size_t j;

		for (j = 0; j < sizeof(kinds) / sizeof(kinds[0]) && !kind; j++)
			if (!strncmp(spec, kinds[j].name, strlen(kinds[j].name)) &&
			    spec[strlen(kinds[j].name)] == '=')
				kind = &kinds[j];
		if (!kind) {
			err("--push %s: expected otlp=URL or pyroscope=URL", spec);
			e = -EINVAL;
			break;
		}
		if (!(d = calloc(1, sizeof(*d))) ||
		    !(d->url = dest_url(spec, kind->name, kind->default_path))) {
			e = d ? -EINVAL : -ENOMEM;
			free(d);
			break;
		}
		if (!kind->query_ok && strpbrk(d->url, "?#")) {
			err("--push %s: a Pyroscope URL takes no query or fragment", spec);
			free(d->url);
			free(d);
			e = -EINVAL;
			break;
		}
		d->base.ops = kind->ops;
		d->kind = kind;
		d->push = p;
		p->refs++;
		/* The URL is checked (dest_url): a host, then its path. */
		d->path = strchr(strstr(d->url, "://") + 3, '/');
		d->origin = strndup(d->url, (size_t)(d->path - d->url));
		if (p->has_credentials && !strncmp(d->url, "http://", 7) && !loopback(d->url))
			warn("--push %s: credentials sent over plain http", d->url);
		spool_name(d, name, sizeof(name));
		e = d->origin ? 0 : -ENOMEM;
		if (!e)
			e = spool_open(&(struct spool_cfg){c->out->fd, c->out->path, name, d->url,
							   c->spool_max, send_one, d},
				       &d->spool);
		if (e)
			d->finished = 1; /* no spool to close */
		OUT_FIRST(e, sinks_add(sinks, &d->base));
	}
	push_unref(p);
	return e;
}
