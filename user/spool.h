/* --push's spool: each destination's windows on their way, a file each
 * (formats/spool.h) in OUTDIR/spool/DEST/, sent in order by a thread of the
 * destination's own, so that a slow or absent backend never stalls the
 * drain. A window is put in the spool when it closes, and removed once it
 * is sent (2xx) or refused for good (a 4xx other than 408 and 429: the
 * server's message said once, the window dropped and counted). Anything
 * else (no connection, a timeout, 408, 429, 5xx) is retried with
 * exponential backoff (1 s doubling to 60 s), the oldest first, and the
 * later ones wait behind it. The files outlive the process: a spool left
 * by an earlier run (stopped, killed, its backend down) is read when the
 * next one starts and sent first. Its bound (--spool-max) counts the files
 * on disk: a window that would pass it is dropped, counted and said. */
#ifndef USER_SPOOL_H
#define USER_SPOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "formats/spool.h"

#define SPOOL_MAX_DEFAULT (256ULL << 20)

/* What a send did: sent, to try again later, refused for good. */
enum spool_result { SPOOL_SENT, SPOOL_RETRY, SPOOL_REJECTED };
/* Sends r; aborts (SPOOL_RETRY) once CLOCK_MONOTONIC passes *deadline_ns
 * when that is not 0 (read as it runs: a stop sets it). Says what went
 * wrong itself (the URL, the server's reason). Called on the spool's
 * thread. */
typedef enum spool_result (*spool_send_fn)(void *ctx, const struct spool_req *r,
					   const volatile uint64_t *deadline_ns);

struct spool_cfg {
	int root_fd;	       /* the output directory, open */
	const char *root_path; /* ... its path, for messages */
	const char *name;      /* the destination's directory under spool/ */
	const char *what;      /* the destination, for messages: its URL */
	uint64_t max_bytes;    /* --spool-max; 0: SPOOL_MAX_DEFAULT */
	spool_send_fn send;
	void *ctx;
};

struct spool_stats {
	uint64_t sent, retries;
	uint64_t dropped_full, dropped_rejected, dropped_unreadable;
	uint64_t queued, queued_bytes; /* in the spool now */
	uint64_t found;		       /* left by an earlier run, found at the start */
};

struct spool;
/* Makes OUTDIR/spool/NAME/, reads what an earlier run left there, and starts
 * the sender. 0, or -errno after a one-line error naming the directory. */
int spool_open(const struct spool_cfg *c, struct spool **out);
/* A window's request into the spool (then sent in its turn): 0, or
 * -ENOSPC (past --spool-max: dropped, counted and said) or -errno (it
 * could not be written: dropped, counted and said). */
int spool_put(struct spool *s, const struct spool_req *r);
/* The stop: what is in the spool is tried once more, now, in order, until
 * a try fails or grace_ns passes (an answer still awaited is then given
 * up); what is left stays on disk for the next start, said in a line. The
 * sender ended and s freed. 0 when nothing was left or refused since the
 * start, else -EIO. */
int spool_close(struct spool *s, uint64_t grace_ns);
void spool_get_stats(struct spool *s, struct spool_stats *st);

#endif
