/* --window: see continuous.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "user/continuous.h"
#include "user/util.h"

#define WINDOW_PREFIX "window-"

struct continuous {
	uint64_t period_ns;
	struct retain keep;
	struct outdir *root;
	/* The window being written: its directory stays here (not on the
	 * stack) since outdir_abort() may reach it from a signal handler. */
	struct outdir win;
	char path[PATH_MAX];
	char name[64];
};

int cont_new(uint64_t period_ns, const struct retain *keep, struct outdir *root,
	     struct continuous **out)
{
	struct continuous *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->period_ns = period_ns;
	c->keep = *keep;
	c->root = root;
	c->win.fd = -1;
	*out = c;
	return 0;
}

void cont_free(struct continuous *c)
{
	if (!c)
		return;
	if (c->win.fd >= 0)
		close(c->win.fd);
	free(c);
}

uint64_t cont_period_ns(const struct continuous *c)
{
	return c->period_ns;
}

struct outdir *cont_window_dir(struct continuous *c, uint64_t start_realtime_ns, const char **path)
{
	time_t t = (time_t)(start_realtime_ns / 1000000000ULL);
	struct tm tm;
	char stamp[32];
	struct stat st;
	int n;

	if (c->win.fd >= 0)
		close(c->win.fd);
	c->win = (struct outdir){.fd = -1};
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	/* Two windows in one second (a window closed early by a stop, then
	 * a restart): the second gets -1, and so on. */
	for (n = 0; n < 1000; n++) {
		if (n)
			snprintf(c->name, sizeof(c->name), WINDOW_PREFIX "%s-%d", stamp, n);
		else
			snprintf(c->name, sizeof(c->name), WINDOW_PREFIX "%s", stamp);
		if (fstatat(c->root->fd, c->name, &st, AT_SYMLINK_NOFOLLOW))
			break;
	}
	snprintf(c->path, sizeof(c->path), "%s/%s", c->root->path, c->name);
	if (outdir_open(&c->win, c->path))
		return NULL;
	*path = c->path;
	return &c->win;
}

/* A window directory on disk, for the rotation. */
struct wdir {
	char name[64];
	uint64_t bytes;
	time_t start;
};

static int cmp_wdir(const void *a, const void *b)
{
	return strcmp(((const struct wdir *)a)->name, ((const struct wdir *)b)->name);
}

/* Its start from its name; 0 when the name is not one we gave. */
static time_t name_time(const char *name)
{
	struct tm tm = {0};
	const char *end = strptime(name + strlen(WINDOW_PREFIX), "%Y%m%dT%H%M%SZ", &tm);

	return end ? timegm(&tm) : 0;
}

/* The files' sizes (a window directory holds files only). */
static uint64_t dir_bytes(int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	struct stat st;
	uint64_t sum = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    !fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return sum;
}

/* Removes a window directory: its files, then itself. 0 or -errno. */
static int remove_window(int root, const char *name)
{
	int dfd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (dfd < 0)
		return -errno;
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return -errno;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	return unlinkat(root, name, AT_REMOVEDIR) ? -errno : 0;
}

static unsigned rotate(struct continuous *c)
{
	VEC(struct wdir) v = {0};
	uint64_t total = 0;
	struct dirent *e;
	size_t i, n;
	unsigned removed = 0;
	time_t now = time(NULL);
	int dfd = openat(c->root->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		warn("--retain: %s: %s", c->root->path, strerror(errno));
		return 0;
	}
	while ((e = readdir(d))) {
		struct wdir w = {0};
		int fd;

		if (strncmp(e->d_name, WINDOW_PREFIX, strlen(WINDOW_PREFIX)) ||
		    strlen(e->d_name) >= sizeof(w.name) || !(w.start = name_time(e->d_name)))
			continue;
		snprintf(w.name, sizeof(w.name), "%s", e->d_name);
		fd = openat(c->root->fd, w.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		w.bytes = dir_bytes(fd);
		total += w.bytes;
		if (VEC_PUSH(v, w))
			break;
	}
	closedir(d);
	if (v.n > 1)
		qsort(v.v, v.n, sizeof(*v.v), cmp_wdir);
	/* The oldest first, the newest (the one just written) never. */
	for (i = 0, n = v.n; i + 1 < v.n; i++) {
		const struct wdir *w = &v.v[i];
		bool over = (c->keep.count && n > c->keep.count) ||
			    (c->keep.age_s && w->start + (time_t)c->keep.age_s < now) ||
			    (c->keep.bytes && total > c->keep.bytes);
		int err;

		if (!over)
			break;
		if ((err = remove_window(c->root->fd, w->name))) {
			warn("--retain: %s/%s: %s", c->root->path, w->name, strerror(-err));
			break;
		}
		removed++;
		n--;
		total -= w->bytes;
	}
	VEC_FREE(v);
	return removed;
}

unsigned cont_window_done(struct continuous *c)
{
	if (c->win.fd >= 0)
		close(c->win.fd);
	c->win.fd = -1;
	if (!c->keep.count && !c->keep.age_s && !c->keep.bytes)
		return 0;
	return rotate(c);
}

int cont_parse_retain(const char *s, struct retain *r, const char **why)
{
	char *copy = xstrdup(s), *item, *save = NULL;
	int e = 0;

	*r = (struct retain){0};
	for (item = strtok_r(copy, ",", &save); item && !e; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq) {
			*why = "expected count=N, age=SECONDS or size=BYTES, comma-separated";
			e = -EINVAL;
			break;
		}
		*eq++ = 0;
		if (!strcmp(item, "count"))
			e = parse_size_bytes(eq, &r->count) || strpbrk(eq, "KkMmGg") ? -EINVAL : 0;
		else if (!strcmp(item, "age"))
			e = parse_size_bytes(eq, &r->age_s) || strpbrk(eq, "KkMmGg") ? -EINVAL : 0;
		else if (!strcmp(item, "size"))
			e = parse_size_bytes(eq, &r->bytes);
		else
			e = -EINVAL;
		if (e)
			*why = "expected count=N, age=SECONDS or size=BYTES (512K, 4M, 1G), each a "
			       "whole number above 0";
	}
	if (!e && !r->count && !r->age_s && !r->bytes) {
		*why = "expected count=N, age=SECONDS or size=BYTES";
		e = -EINVAL;
	}
	free(copy);
	return e;
}
