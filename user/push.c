/* --push: see push.h. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "user/push_dest.h"
#include "user/pyroscope.h"
#include "user/sink.h"
#include "user/util.h"

#define OTLP_PROFILES_PATH "/v1development/profiles"
/* What is read of an answer: enough for any error message. */
#define ANSWER_MAX (64 << 10)
/* The decompressed profile: far above any run's, far below memory's end. */
#define PROFILE_MAX (1ULL << 32)

/* What the destinations share: the credentials, the names; freed with the
 * last of their sinks. */
struct push {
	struct curl_slist *headers; /* credentials and Content-Type */
	bool has_credentials;
	const char *service_name, *version;
	int refs;
};

/* A destination: one sink. */
struct push_sink {
	struct sink base;
	struct push *push;
	char *url; /* with the OTLP path */
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
	if (!(l = curl_slist_append(p->headers, h)))
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

char *push_dest_url(const char *spec, const char *kind, const char *path)
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
	if (!*host || *host == '/' || n > 2048 || strpbrk(url, " \t\r\n")) {
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
	curl_slist_free_all(p->headers);
	free(p);
	curl_global_cleanup();
}

int push_read_profile(const struct run_info *ri, struct fmt_buf *b)
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

void push_answer_reason(CURL *c, const struct fmt_buf *body, char *out, size_t cap)
{
	char *type = NULL;
	size_t n;

	out[0] = 0;
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
	if (type && strstr(type, "protobuf") && !otlp_decode_status(body->p, body->n, out, cap) &&
	    out[0])
		return;
	/* One line: the first, without its end. */
	n = body->n ? strcspn((const char *)body->p, "\r\n") : 0;
	fmt_sanitize(out, cap, body->n ? (const char *)body->p : "", n < body->n ? n : body->n);
}

CURL *push_curl(const char *url, const struct curl_slist *headers, struct fmt_buf *answer,
		char errbuf[CURL_ERROR_SIZE])
{
	CURL *c = curl_easy_init();

	if (!c)
		return NULL;
	errbuf[0] = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "bpftrace-rec");
	return c;
}

static int send_one(const struct push_sink *d, const struct fmt_buf *req,
		    const struct otlp_stats *st)
{
	char errbuf[CURL_ERROR_SIZE] = "", reason[512];
	struct fmt_buf answer = {0};
	CURL *c = push_curl(d->url, d->push->headers, &answer, errbuf);
	CURLcode cr;
	long code = 0;
	int e = 0;

	if (!c)
		return -ENOMEM;
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->p);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->n);
	cr = curl_easy_perform(c);
	if (cr == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (cr != CURLE_OK) {
		char why[CURL_ERROR_SIZE + 64];

		snprintf(why, sizeof(why), "%s", errbuf[0] ? errbuf : curl_easy_strerror(cr));
		err("push %s: %s; the recording is in the output directory, not sent", d->url, why);
		e = -EIO;
	} else if (code < 200 || code > 299) {
		push_answer_reason(c, &answer, reason, sizeof(reason));
		err("push %s: HTTP %ld%s%s; the recording is in the output directory, not sent",
		    d->url, code, reason[0] ? ": " : "", reason);
		e = code >= 400 && code < 500 ? -EACCES : -EIO;
	} else {
		int64_t rejected = 0;

		if (otlp_decode_response(answer.p, answer.n, &rejected, reason, sizeof(reason)))
			warn("push %s: HTTP %ld with an answer that is not OTLP's", d->url, code);
		else if (rejected || reason[0])
			warn("push %s: the receiver rejected %" PRId64 " of %zu profiles%s%s",
			     d->url, rejected, st->profiles, reason[0] ? ": " : "", reason);
		info("pushed %" PRId64 " samples of %zu process%s (%zu profiles, %zu bytes) to %s",
		     st->ntypes ? st->values[0] : 0, st->resources, st->resources == 1 ? "" : "es",
		     st->profiles, req->n, d->url);
	}
	free(answer.p);
	curl_easy_cleanup(c);
	return e;
}

void push_procs_free(struct push_procs *pp)
{
	free(pp->v);
	free(pp->ids);
}

int push_procs_of(const struct run_info *ri, struct push_procs *pp)
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
		push_procs_free(pp);
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

/* A window to one destination: its profile.pb.gz, as OTLP. */
static int push_emit(struct sink *k, const struct window *w)
{
	const struct push_sink *d = (const struct push_sink *)k;
	const struct run_info *ri = w->ri;
	struct fmt_buf pb = {0}, req = {0};
	struct otlp_meta m = {NULL, d->push->service_name, d->push->version, NULL, 0};
	struct push_procs pp;
	struct otlp_stats st;
	int e;

	e = push_read_profile(ri, &pb);
	if (e) {
		err("push %s: %s/profile.pb.gz: %s; nothing sent", d->url, ri->outdir,
		    strerror(-e));
		free(pb.p);
		return e;
	}
	e = push_procs_of(ri, &pp);
	if (!e) {
		m.host_name = pp.host[0] ? pp.host : NULL;
		m.procs = pp.v;
		m.nprocs = pp.n;
		e = otlp_from_pprof(pb.p, pb.n, &m, &req, &st);
	}
	if (e)
		err("push %s: %s/profile.pb.gz: %s; nothing sent", d->url, ri->outdir,
		    e == -EINVAL ? "not a profile this tool wrote" : strerror(-e));
	else
		e = send_one(d, &req, &st);
	push_procs_free(&pp);
	free(pb.p);
	free(req.p);
	return e;
}

static void push_sink_free(struct sink *k)
{
	struct push_sink *d = (struct push_sink *)k;

	push_unref(d->push);
	free(d->url);
	free(d);
}

static const struct sink_ops push_ops = {"otlp", push_emit, push_sink_free};

int push_sinks_add(const struct push_config *c, struct sinks *sinks)
{
	struct push *p;
	int i, e = 0;

	if (!c->ndests)
		return 0;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		err("--push: libcurl could not start");
		return -ENOMEM;
	}
	if (!(p = calloc(1, sizeof(*p)))) {
		curl_global_cleanup();
		return -ENOMEM;
	}
	p->refs = 1; /* this function's, dropped at its end */
	p->service_name = c->service_name;
	p->version = c->version;
	e = c->headers_file ? read_headers_file(p, c->headers_file) : read_headers_env(p);
	for (i = 0; i < c->ndests && !e; i++) {
		const char *spec = c->dests[i];
		struct push_sink *d;
		struct sink *k;

		if (p->has_credentials && strstr(spec, "=http://") && !loopback(spec))
			warn("--push %s: credentials sent over plain http", spec);
		/* Another kind of destination: a sink of its own, which takes a
		 * copy of the credentials (not OTLP's Content-Type). */
		if (!strncmp(spec, "pyroscope=", 10)) {
			k = pyroscope_sink_new(spec, c, p->headers);
			e = k ? sinks_add(sinks, k) : -EINVAL;
			continue;
		}
		if (strncmp(spec, "otlp=", 5)) {
			err("--push %s: expected otlp=URL or pyroscope=URL", spec);
			e = -EINVAL;
			break;
		}
		if (!(d = calloc(1, sizeof(*d))) ||
		    !(d->url = push_dest_url(spec, "otlp", OTLP_PROFILES_PATH))) {
			e = d ? -EINVAL : -ENOMEM;
			free(d);
			break;
		}
		d->base.ops = &push_ops;
		d->push = p;
		p->refs++;
		e = sinks_add(sinks, &d->base);
	}
	if (!e) {
		struct curl_slist *l =
		    curl_slist_append(p->headers, "Content-Type: application/x-protobuf");

		if (l)
			p->headers = l;
		else
			e = -ENOMEM;
	}
	push_unref(p);
	return e;
}
