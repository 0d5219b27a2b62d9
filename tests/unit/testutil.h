/* Helpers of the unit tests that talk to the real readers. */
#ifndef TESTS_UNIT_TESTUTIL_H
#define TESTS_UNIT_TESTUTIL_H

#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs a shell command (printf-style) and returns its stdout, malloc'd. */
static char *run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static char *run_cmd(const char *fmt, ...)
{
	char cmd[8192], *out = NULL;
	size_t len = 0;
	FILE *m, *p;
	va_list ap;
	int c;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	m = open_memstream(&out, &len);
	p = popen(cmd, "r");
	while (p && (c = fgetc(p)) != EOF)
		fputc(c, m);
	if (p)
		pclose(p);
	fclose(m);
	return out;
}

/* A whole file, malloc'd, or NULL. */
static char *slurp(const char *path, size_t *len) __attribute__((unused));
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	rewind(f);
	b = malloc(*len + 1);
	if (b && fread(b, 1, *len, f) != *len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	return b;
}

/* The percentage in a reader's listing (pprof -top: flat%; google-pprof
 * --text: the second column) of the line whose name field is name, or
 * starts with name and a space or '@' (google-pprof's address suffix). -1 when
 * absent. */
static double top_pct(const char *out, const char *name) __attribute__((unused));
static double top_pct(const char *out, const char *name)
{
	size_t nl = strlen(name);
	const char *l = out;

	while ((l = strstr(l, name))) {
		const char *s = l, *e = l + nl;
		double v;

		while (s > out && s[-1] != '\n')
			s--;
		if ((s == l || l[-1] == ' ') && (*e == '\n' || *e == 0 || *e == '@' || *e == ' ') &&
		    sscanf(s, "%*s %lf%%", &v) == 1)
			return v;
		l++;
	}
	return -1;
}

/* pyenv's CPython 3.minor (the newest of that minor) into buf, or NULL. */
static const char *pyenv_python(int minor, char *buf, size_t len) __attribute__((unused));
static const char *pyenv_python(int minor, char *buf, size_t len)
{
	const char *root = getenv("PYENV_ROOT");
	char pat[512];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/versions/3.%d.*/bin/python3.%d",
		 root ? root : "/root/.pyenv", minor, minor);
	if (glob(pat, 0, NULL, &g) || !g.gl_pathc)
		return NULL;
	snprintf(buf, len, "%s", g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	return buf;
}

/* The number of the line of file path holding "# LINE:tag" (the Python
 * workloads mark the lines a test expects so), or -1. */
static int line_marker(const char *path, const char *tag) __attribute__((unused));
static int line_marker(const char *path, const char *tag)
{
	char want[64], l[512];
	FILE *f = fopen(path, "r");
	int n = 0, found = -1;

	snprintf(want, sizeof(want), "# LINE:%s", tag);
	while (f && fgets(l, sizeof(l), f)) {
		n++;
		if (strstr(l, want))
			found = n;
	}
	if (f)
		fclose(f);
	return found;
}

/* Each instruction row of `go tool objdump`'s out (changed in place):
 * "TEXT main.funcB(SB) /path/gowork.go", then "  gowork.go:29  0x45...":
 * fn(ctx, function, file base name, line, pc). Returns the rows seen. */
typedef void (*objdump_row_fn)(void *ctx, const char *func, const char *file, int line,
			       unsigned long long pc);
static size_t go_objdump_rows(char *out, objdump_row_fn fn, void *ctx) __attribute__((unused));
static size_t go_objdump_rows(char *out, objdump_row_fn fn, void *ctx)
{
	char func[256] = "", file[256], *line, *save = NULL;
	unsigned long long pc;
	size_t n = 0;
	int ln;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "TEXT %255[^(]", func) == 1)
			continue;
		if (sscanf(line, " %255[^:]:%d 0x%llx", file, &ln, &pc) != 3)
			continue;
		n++;
		fn(ctx, func, file, ln, pc);
	}
	return n;
}

/* s ends with suffix. */
static int ends_with(const char *s, const char *suffix) __attribute__((unused));
static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* GOCACHE for the tests' Go builds: the Makefile's (build/go-cache, kept
 * between runs; a cold one costs a minute of cgo and runtime builds). */
static const char *go_cache(void) __attribute__((unused));
static const char *go_cache(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/build/go-cache", getenv("PWD") ? getenv("PWD") : ".");
	return path;
}

#endif
