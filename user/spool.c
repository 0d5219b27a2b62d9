/* --push's spool: see spool.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "user/spool.h"
#include "user/util.h"

/* The backoff between tries of a window that could not be sent. */
#define RETRY_FIRST_NS (1000000000ULL)
#define RETRY_MAX_NS   (60 * 1000000000ULL)
/* A spooled window's file at most: far above any window's request. */
#define SPOOL_FILE_MAX (1ULL << 31)

struct entry {
	uint64_t seq, bytes;
};

struct spool {
	struct spool_cfg cfg;
	char *name, *what, *path; /* copies; path: OUTDIR/spool/NAME, for messages */
	int dir_fd;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock: */
	VEC(struct entry) q; /* oldest first; q[head] is the next to send */
	size_t head;
	uint64_t next_seq, bytes;
	bool stopping;
	uint64_t retry_at_ns, backoff_ns, retry_max_ns;
	unsigned failures; /* tries in a row that failed */
	struct spool_stats st;
	/* Set by spool_close, read by the send as it runs. */
	volatile uint64_t deadline_ns;
};

static void entry_name(char *buf, size_t n, uint64_t seq)
{
	snprintf(buf, n, "%016" PRIu64 ".req", seq);
}

static int cmp_entry(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->seq, y = ((const struct entry *)b)->seq;

	return x < y ? -1 : x > y;
}

/* What an earlier run left: NNNN.req files, in order; its temporary files
 * (a run killed while writing one) removed. */
static int scan(struct spool *s)
{
	int fd = openat(s->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int err = 0;

	if (!d) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((e = readdir(d)) && !err) {
		struct entry en = {0};
		struct stat st;
		char *end;

		if (!strncmp(e->d_name, ".tmp-", 5)) {
			unlinkat(s->dir_fd, e->d_name, 0);
			continue;
		}
		errno = 0;
		en.seq = strtoull(e->d_name, &end, 10);
		if (errno || end != e->d_name + 16 || strcmp(end, ".req") ||
		    fstatat(s->dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		en.bytes = (uint64_t)st.st_size;
		err = VEC_PUSH(s->q, en);
	}
	closedir(d);
	if (s->q.n > 1)
		qsort(s->q.v, s->q.n, sizeof(*s->q.v), cmp_entry);
	for (size_t i = 0; i < s->q.n; i++)
		s->bytes += s->q.v[i].bytes;
	s->next_seq = s->q.n ? s->q.v[s->q.n - 1].seq + 1 : 1;
	s->st.found = s->q.n;
	return err;
}

/* The next window's file, read and checked. 0, or -errno / -EINVAL. */
static int load(struct spool *s, uint64_t seq, uint8_t **buf, size_t *len)
{
	char name[32];
	int fd, err;

	entry_name(name, sizeof(name), seq);
	fd = openat(s->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = read_fd_all(fd, SPOOL_FILE_MAX, (char **)buf, len);
	close(fd);
	return err;
}

static void drop_head(struct spool *s)
{
	char name[32];

	entry_name(name, sizeof(name), s->q.v[s->head].seq);
	unlinkat(s->dir_fd, name, 0);
	s->bytes -= s->q.v[s->head].bytes;
	s->head++;
	/* The queue's front moved on: the space before it is reused. */
	if (s->head == s->q.n)
		s->head = s->q.n = 0;
	else if (s->head > 64 && s->head * 2 > s->q.n) {
		memmove(s->q.v, s->q.v + s->head, (s->q.n - s->head) * sizeof(*s->q.v));
		s->q.n -= s->head;
		s->head = 0;
	}
}

static void *sender(void *arg)
{
	struct spool *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t now = now_ns(CLOCK_MONOTONIC), seq;
		char fields[2][SPOOL_FIELD_MAX + 1];
		enum spool_result res;
		struct spool_req r;
		uint8_t *buf = NULL;
		size_t len = 0;
		int err;

		if (s->head == s->q.n) {
			if (s->stopping)
				break;
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		/* At the stop: every window once more, now, until one fails
		 * or the grace is over. */
		if (s->stopping && (s->failures || (s->deadline_ns && now >= s->deadline_ns)))
			break;
		if (!s->stopping && now < s->retry_at_ns) {
			struct timespec ts;
			uint64_t wake = now_ns(CLOCK_REALTIME) + (s->retry_at_ns - now);

			ts.tv_sec = (time_t)(wake / 1000000000ULL);
			ts.tv_nsec = (long)(wake % 1000000000ULL);
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
			continue;
		}
		seq = s->q.v[s->head].seq;
		pthread_mutex_unlock(&s->lock);
		err = load(s, seq, &buf, &len);
		if (!err)
			err = spool_decode(buf, len, &r, fields);
		res = err ? SPOOL_REJECTED : s->cfg.send(s->cfg.ctx, &r, &s->deadline_ns);
		free(buf);
		pthread_mutex_lock(&s->lock);
		if (err) {
			/* Not a file this tool wrote, or not readable: it can
			 * never be sent. */
			warn("push %s: %s/%016" PRIu64 ".req: %s; dropped", s->what, s->path, seq,
			     err == -EINVAL ? "not a spooled window" : strerror(-err));
			s->st.dropped_unreadable++;
			drop_head(s);
			continue;
		}
		if (res == SPOOL_RETRY) {
			s->st.retries++;
			s->failures++;
			s->backoff_ns = s->backoff_ns ? s->backoff_ns * 2 : RETRY_FIRST_NS;
			if (s->backoff_ns > s->retry_max_ns)
				s->backoff_ns = s->retry_max_ns;
			s->retry_at_ns = now_ns(CLOCK_MONOTONIC) + s->backoff_ns;
			if (s->failures == 1 && !s->stopping)
				warn("push %s: %zu window%s kept in %s, tried again with backoff",
				     s->what, s->q.n - s->head, s->q.n - s->head == 1 ? "" : "s",
				     s->path);
			continue;
		}
		if (res == SPOOL_SENT) {
			s->st.sent++;
			if (s->failures)
				info("push %s: sent again after %u tries that failed; %zu window%s "
				     "left in the spool",
				     s->what, s->failures, s->q.n - s->head - 1,
				     s->q.n - s->head - 1 == 1 ? "" : "s");
			s->failures = 0;
			s->backoff_ns = 0;
			s->retry_at_ns = 0;
		} else {
			s->st.dropped_rejected++;
		}
		drop_head(s);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int spool_open(const struct spool_cfg *c, struct spool **out)
{
	struct spool *s = calloc(1, sizeof(*s));
	const char *env_max = getenv("BPFTRACE_REC_RETRY_MAX_S"); /* the tests' */
	size_t n;
	int err = 0, sfd;

	if (!s)
		return -ENOMEM;
	s->cfg = *c;
	s->name = xstrdup(c->name);
	s->what = xstrdup(c->what);
	n = strlen(c->root_path) + strlen(c->name) + 16;
	s->path = malloc(n);
	if (s->path)
		snprintf(s->path, n, "%s/spool/%s", c->root_path, c->name);
	s->cfg.max_bytes = c->max_bytes ? c->max_bytes : SPOOL_MAX_DEFAULT;
	s->retry_max_ns =
	    env_max && atoi(env_max) > 0 ? atoi(env_max) * 1000000000ULL : RETRY_MAX_NS;
	s->dir_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (!s->path) {
		spool_close(s, 0);
		return -ENOMEM;
	}
	if (mkdirat(c->root_fd, "spool", 0700) && errno != EEXIST)
		err = -errno;
	sfd =
	    err ? -1 : openat(c->root_fd, "spool", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!err && sfd < 0)
		err = -errno;
	if (!err && mkdirat(sfd, c->name, 0700) && errno != EEXIST)
		err = -errno;
	if (!err &&
	    (s->dir_fd = openat(sfd, c->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		err = -errno;
	if (sfd >= 0)
		close(sfd);
	if (!err)
		err = scan(s);
	if (!err && (err = -pthread_create(&s->thread, NULL, sender, s)) == 0)
		s->started = true;
	if (err) {
		err("--push %s: the spool %s: %s", s->what, s->path, strerror(-err));
		spool_close(s, 0);
		return err;
	}
	if (s->st.found)
		info("push %s: %" PRIu64 " window%s left in %s by an earlier run, sent first",
		     s->what, s->st.found, s->st.found == 1 ? "" : "s", s->path);
	*out = s;
	return 0;
}

/* The file, written under a temporary name and renamed: a run killed while
 * writing it leaves no half window to send. 0 or -errno. */
static int write_file(struct spool *s, uint64_t seq, const struct fmt_buf *b)
{
	char tmp[40], name[32];
	size_t off = 0;
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), ".tmp-%016" PRIu64, seq);
	entry_name(name, sizeof(name), seq);
	fd = openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < b->n && !err) {
		ssize_t w = write(fd, b->p + off, b->n - off);

		if (w < 0 && errno != EINTR)
			err = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(s->dir_fd, tmp, s->dir_fd, name))
		err = -errno;
	if (err)
		unlinkat(s->dir_fd, tmp, 0);
	return err;
}

int spool_put(struct spool *s, const struct spool_req *r)
{
	struct fmt_buf b = {0};
	uint64_t seq;
	int err = spool_encode(r, &b);

	pthread_mutex_lock(&s->lock);
	if (!err && s->bytes + b.n > s->cfg.max_bytes) {
		s->st.dropped_full++;
		warn("push %s: the spool %s is full (%" PRIu64 " bytes of --spool-max %" PRIu64
		     "): a window of %zu bytes dropped (%" PRIu64 " so far)",
		     s->what, s->path, s->bytes, s->cfg.max_bytes, b.n, s->st.dropped_full);
		err = -ENOSPC;
	} else if (err) {
		s->st.dropped_unreadable++;
		err("push %s: a window could not be spooled: %s; dropped", s->what, strerror(-err));
	}
	seq = s->next_seq++;
	pthread_mutex_unlock(&s->lock);
	/* Written outside the lock: the sender goes on meanwhile. */
	if (!err && (err = write_file(s, seq, &b))) {
		pthread_mutex_lock(&s->lock);
		s->st.dropped_unreadable++;
		pthread_mutex_unlock(&s->lock);
		err("push %s: %s/%016" PRIu64 ".req: %s; the window is dropped", s->what, s->path,
		    seq, strerror(-err));
	}
	if (!err) {
		pthread_mutex_lock(&s->lock);
		/* In seq order: the one lock-holder writing is the drain. */
		if (VEC_PUSH(s->q, ((struct entry){seq, b.n})))
			err = -ENOMEM; /* on disk: sent at the next start */
		else
			s->bytes += b.n;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
	free(b.p);
	return err;
}

void spool_get_stats(struct spool *s, struct spool_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	st->queued = s->q.n - s->head;
	st->queued_bytes = s->bytes;
	pthread_mutex_unlock(&s->lock);
}

int spool_close(struct spool *s, uint64_t grace_ns)
{
	struct spool_stats st;
	int ret;

	if (!s)
		return 0;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		s->failures = 0; /* one more try each, now */
		s->deadline_ns = now_ns(CLOCK_MONOTONIC) + grace_ns;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	spool_get_stats(s, &st);
	if (s->started && st.queued)
		warn("push %s: %" PRIu64 " window%s (%" PRIu64 " bytes) not sent, kept in %s: "
		     "sent at the next start with the same output directory",
		     s->what, st.queued, st.queued == 1 ? "" : "s", st.queued_bytes, s->path);
	if (st.dropped_rejected || st.dropped_full || st.dropped_unreadable)
		warn("push %s: %" PRIu64 " window%s sent, %" PRIu64 " dropped: %" PRIu64
		     " refused by the server, %" PRIu64 " past --spool-max, %" PRIu64
		     " not writable or readable",
		     s->what, st.sent, st.sent == 1 ? "" : "s",
		     st.dropped_rejected + st.dropped_full + st.dropped_unreadable,
		     st.dropped_rejected, st.dropped_full, st.dropped_unreadable);
	ret =
	    st.queued || st.dropped_rejected || st.dropped_full || st.dropped_unreadable ? -EIO : 0;
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	VEC_FREE(s->q);
	free(s->name);
	free(s->what);
	free(s->path);
	free(s);
	return ret;
}
