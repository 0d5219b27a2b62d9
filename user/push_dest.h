/* What the kinds of push destination share: user/push.c's OTLP and
 * user/pyroscope.c's Pyroscope sinks read the same profile.pb.gz, name the
 * same processes, and speak HTTP(S) through libcurl the same way (the
 * certificate verified, no redirect, the server's own message on an
 * error). Each reports its errors itself, as push.h says. */
#ifndef USER_PUSH_DEST_H
#define USER_PUSH_DEST_H

#include <curl/curl.h>
#include <sys/utsname.h>
#include "formats/otlp.h"
#include "formats/util.h"
#include "user/run_info.h"

/* "KIND=URL", http or https with a host: the URL to post to (malloc'ed),
 * path appended when the URL has none; NULL after an error naming spec. */
char *push_dest_url(const char *spec, const char *kind, const char *path);

/* profile.pb.gz as written, decompressed, read relative to the output
 * directory opened at the start (never by path), appended to b. 0 or
 * -errno. */
int push_read_profile(const struct run_info *ri, struct fmt_buf *b);

/* What the recorder still holds of the processes: each one's program path
 * and, for those still running, its container; and the host's name ("":
 * unknown). */
struct push_procs {
	struct otlp_process *v;
	char (*ids)[65]; /* the container ids v points to */
	size_t n;
	char host[sizeof(((struct utsname *)0)->nodename)];
};
/* 0 or -ENOMEM (pp empty: push_procs_free may be called either way). */
int push_procs_of(const struct run_info *ri, struct push_procs *pp);
void push_procs_free(struct push_procs *pp);

/* An easy handle for url with the push's options: the answer's body is
 * kept in answer (its first 64 KiB), libcurl's reason in errbuf. NULL on
 * ENOMEM. */
CURL *push_curl(const char *url, const struct curl_slist *headers, struct fmt_buf *answer,
		char errbuf[CURL_ERROR_SIZE]);
/* The server's reason in an error answer (c's, body): google.rpc.Status's
 * message in a protobuf answer, else the body's first line, sanitized. */
void push_answer_reason(CURL *c, const struct fmt_buf *body, char *out, size_t cap);

#endif
