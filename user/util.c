#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "formats/util.h"
#include "user/util.h"

static int verbosity;

void msg_set_verbosity(int v)
{
	verbosity = v;
}

int msg_verbosity(void)
{
	return verbosity;
}

void sanitize_append(char *dst, size_t cap, const char *src)
{
	size_t len = strlen(dst);

	if (len < cap)
		fmt_sanitize(dst + len, cap - len, src, strlen(src));
}

void msg(enum msg_level level, const char *fmt, ...)
{
	static const char *const prefix[] = {"", "warning: ", "", "debug: "};
	char raw[1024], line[1200] = "bpftrace-rec: ";
	va_list ap;

	if ((level == MSG_INFO && verbosity < 0) || (level == MSG_DEBUG && verbosity < 1))
		return;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	strcat(line, prefix[level]);
	sanitize_append(line, sizeof(line) - 1, raw);
	strcat(line, "\n");
	fputs(line, stderr);
}

int vec_grow_(void **v, size_t *cap, size_t want, size_t elsz)
{
	return fmt_grow(v, cap, want, elsz);
}

uint32_t idtab_find(const struct idtab *t, uint64_t hash, idtab_eq_fn eq, const void *ctx,
		    const void *key)
{
	uint64_t tag = hash >> 32;
	size_t mask, i;

	if (!t->cap)
		return UINT32_MAX;
	mask = t->cap - 1;
	for (i = hash_u64(tag) & mask;; i = (i + 1) & mask) {
		uint64_t s = t->slots[i];

		if (!s)
			return UINT32_MAX;
		if ((s >> 32) == tag && eq(ctx, (uint32_t)s - 1, key))
			return (uint32_t)s - 1;
	}
}

static void idtab_put(uint64_t *slots, size_t cap, uint64_t hash, uint64_t slot)
{
	size_t i, mask = cap - 1;

	for (i = hash & mask; slots[i]; i = (i + 1) & mask)
		;
	slots[i] = slot;
}

int idtab_insert(struct idtab *t, uint64_t hash, uint32_t id)
{
	if ((t->n + 1) * 4 > t->cap * 3) {
		/* Slots keep only the hash's high half (the tag), so positions
		 * are derived from the tag alone, before and after growing. */
		size_t ncap = t->cap ? t->cap * 2 : 64, i;
		uint64_t *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (i = 0; i < t->cap; i++)
			if (t->slots[i])
				idtab_put(ns, ncap, hash_u64(t->slots[i] >> 32), t->slots[i]);
		free(t->slots);
		t->slots = ns;
		t->cap = ncap;
	}
	idtab_put(t->slots, t->cap, hash_u64(hash >> 32), (hash >> 32) << 32 | ((uint64_t)id + 1));
	t->n++;
	return 0;
}

void idtab_free(struct idtab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->n = 0;
}

uint64_t hash_bytes(const void *p, size_t n)
{
	/* FNV-1a, then a final mix for the table's low bits. */
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *s++) * 0x100000001b3ULL;
	return hash_u64(h);
}

int read_fd_all(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1), *nb;
	ssize_t r;

	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(b);
				return -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = -errno;

			free(b);
			return err;
		}
		if (r == 0)
			break;
		n += r;
	}
	b[n] = 0;
	*buf = b;
	if (len)
		*len = n;
	return 0;
}

int read_path_all(const char *path, int flags, size_t max, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags), err;

	if (fd < 0)
		return -errno;
	err = read_fd_all(fd, max, buf, len);
	close(fd);
	return err;
}

int open_regular(const char *path, int flags)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | flags);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

uint64_t now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d) {
		fputs("bpftrace-rec: out of memory\n", stderr);
		abort();
	}
	return d;
}
