#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "formats/procmaps.h"
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

/* Whether stderr is the journal's stream (systemd sets JOURNAL_STREAM to
 * its device and inode for a service): each line then starts with its
 * syslog level, "<4>", which journald takes as the entry's priority
 * (SyslogLevelPrefix=, on by default) and removes. Decided once. */
static bool to_journal(void)
{
	static int known = -1;
	const char *js;
	unsigned long long dev, ino;
	struct stat st;

	if (known < 0) {
		js = getenv("JOURNAL_STREAM");
		known = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
			!fstat(STDERR_FILENO, &st) && st.st_dev == dev && st.st_ino == ino;
	}
	return known;
}

static void msg_vline(char *line, size_t cap, enum msg_level level, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {"", "warning: ", "", "debug: "};
	/* syslog's err, warning, info, debug */
	static const char *const journal_level[] = {"<3>", "<4>", "<6>", "<7>"};
	char raw[1024];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	snprintf(line, cap, "%sbpftrace-rec: %s", to_journal() ? journal_level[level] : "",
		 prefix[level]);
	sanitize_append(line, cap - 1, raw);
	strcat(line, "\n");
}

void msg_line(char *line, size_t cap, enum msg_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_vline(line, cap, level, fmt, ap);
	va_end(ap);
}

void msg(enum msg_level level, const char *fmt, ...)
{
	char line[1200];
	va_list ap;

	if ((level == MSG_INFO && verbosity < 0) || (level == MSG_DEBUG && verbosity < 1))
		return;
	va_start(ap, fmt);
	msg_vline(line, sizeof(line), level, fmt, ap);
	va_end(ap);
	fputs(line, stderr);
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
	return read_path_all_at(AT_FDCWD, path, flags, max, buf, len);
}

int read_path_all_at(int dirfd, const char *path, int flags, size_t max, char **buf, size_t *len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | flags), err;

	if (fd < 0)
		return -errno;
	err = read_fd_all(fd, max, buf, len);
	close(fd);
	return err;
}

const char *const loader_lib_dirs[] = {
#if defined(__x86_64__)
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
#endif
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
    NULL,
};

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

/* The item of list that is name followed by one of ends, its end there;
 * NULL when none. */
static const char *list_item(const char *list, const char *name, const char *ends)
{
	size_t n = strlen(name);

	while (list && *list) {
		if (!strncmp(list, name, n) && (!list[n] || strchr(ends, list[n])))
			return list + n;
		list = strchr(list, ',');
		list = list ? list + 1 : NULL;
	}
	return NULL;
}

bool list_has(const char *list, const char *name)
{
	const char *end = list_item(list, name, ",");

	return end && (!*end || *end == ',');
}

const char *list_value(const char *list, const char *name)
{
	const char *end = list_item(list, name, "@");

	return end && *end == '@' ? end + 1 : NULL;
}

int parse_size_bytes(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		x <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		x <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		x <<= 30, end++;
	if (errno || end == s || *end || !x || x > (1ULL << 40) || *s == '-')
		return -EINVAL;
	*v = x;
	return 0;
}

void elf_scan_dynsym(Elf *elf,
		     void (*fn)(void *ctx, const char *name, uint64_t value, uint64_t size),
		     void *ctx)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Scn *strscn;
		Elf_Data *d, *str;
		GElf_Shdr sh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)) || !(strscn = elf_getscn(elf, sh.sh_link)) ||
		    !(str = elf_getdata(strscn, NULL)) || !str->d_buf || !str->d_size)
			continue;
		if (gelf_getclass(elf) == ELFCLASS64 && d->d_type == ELF_T_SYM) {
			const Elf64_Sym *sym = d->d_buf;
			const char *names = str->d_buf;

			n = d->d_size / sizeof(*sym);
			for (size_t i = 0; i < n; i++)
				if (sym[i].st_shndx != SHN_UNDEF && str->d_size > 2 &&
				    (size_t)sym[i].st_name < str->d_size - 2 &&
				    memchr(names + sym[i].st_name, 0, str->d_size - sym[i].st_name))
					fn(ctx, names + sym[i].st_name, sym[i].st_value,
					   sym[i].st_size);
			continue;
		}
		n = sh.sh_entsize ? d->d_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
			    (name = elf_strptr(elf, sh.sh_link, sym.st_name)) && name[0])
				fn(ctx, name, sym.st_value, sym.st_size);
		}
	}
}

void *vec_pid_find(const void *v, size_t n, size_t size, size_t off, pid_t pid)
{
	for (size_t i = 0; i < n; i++) {
		const char *e = (const char *)v + i * size;
		pid_t p;

		memcpy(&p, e + off, sizeof(p));
		if (p == pid)
			return (void *)e;
	}
	return NULL;
}

void vec_pid_drop(void *v, size_t *n, size_t size, size_t off, pid_t pid)
{
	char *e = vec_pid_find(v, *n, size, off, pid);

	if (e && e != (char *)v + --*n * size)
		memcpy(e, (char *)v + *n * size, size);
}

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct file_memo *fm = ctx;

	return !memcmp(fm->v + (size_t)id * fm->size, key, sizeof(struct file_memo_key));
}

void *file_memo_get(struct file_memo *fm, pid_t pid, const struct procmaps_entry *m,
		    file_memo_read_fn fn, void *ctx)
{
	struct file_memo_key k = {.dev = (uint64_t)m->dev_major << 32 | m->dev_minor,
				  .ino = m->inode};
	uint64_t h = hash_u64(k.dev ^ hash_u64(k.ino));
	uint32_t id = idtab_find(&fm->by_file, h, memo_eq, fm, &k);
	char path[64], *e;
	int fd;

	if (id != UINT32_MAX)
		return fm->v + (size_t)id * fm->size;
	if (fmt_grow((void **)&fm->v, &fm->cap, fm->n + 1, fm->size))
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
		 m->end);
	fd = open_regular(path, 0);
	if (fd < 0)
		return NULL;
	e = fm->v + fm->n * fm->size;
	memset(e, 0, fm->size);
	memcpy(e, &k, sizeof(k));
	fn(ctx, fd, m, e);
	close(fd);
	if (idtab_insert(&fm->by_file, h, (uint32_t)fm->n))
		return NULL;
	fm->n++;
	return e;
}

void file_memo_free(struct file_memo *fm)
{
	free(fm->v);
	idtab_free(&fm->by_file);
	*fm = (struct file_memo){.size = fm->size};
}
