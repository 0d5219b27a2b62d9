/* Sinks: see sink.h. */
#include <errno.h>
#include <stdlib.h>
#include "user/outdir.h"
#include "user/output.h"
#include "user/sink.h"

int sinks_add(struct sinks *s, struct sink *k)
{
	if (!k)
		return -ENOMEM;
	if (s->n >= SINKS_MAX) {
		k->ops->free(k);
		return -ENOSPC;
	}
	s->v[s->n++] = k;
	return 0;
}

int sinks_emit(struct sinks *s, const struct window *w)
{
	int i, first = 0;

	for (i = 0; i < s->n; i++)
		OUT_FIRST(first, s->v[i]->ops->emit(s->v[i], w));
	return first;
}

int sinks_finish(struct sinks *s)
{
	int i, first = 0;

	for (i = 0; i < s->n; i++)
		if (s->v[i]->ops->finish)
			OUT_FIRST(first, s->v[i]->ops->finish(s->v[i]));
	return first;
}

void sinks_json(const struct sinks *s, FILE *f)
{
	int i, n = 0;

	for (i = 0; i < s->n; i++) {
		if (!s->v[i]->ops->json)
			continue;
		fputs(n++ ? ", " : ",\n  \"push\": [", f);
		s->v[i]->ops->json(s->v[i], f);
	}
	if (n)
		fputc(']', f);
}

void sinks_free(struct sinks *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		s->v[i]->ops->free(s->v[i]);
	s->n = 0;
}

static int files_emit(struct sink *s, const struct window *w)
{
	(void)s;
	return output_write(w->ri);
}

static void files_free(struct sink *s)
{
	free(s);
}

static const struct sink_ops files_ops = {"files", files_emit, NULL, NULL, files_free};

struct sink *files_sink_new(void)
{
	struct sink *s = malloc(sizeof(*s));

	if (s)
		s->ops = &files_ops;
	return s;
}
