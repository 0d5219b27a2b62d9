/* libFuzzer target: formats/pyroscope.c. The input is read as a pprof
 * profile and split into Pyroscope's per-process parts: each part's profile
 * must read back (formats/pprof_in.c), its name must keep to Pyroscope's key
 * syntax, and the parts' samples must add up to the input's, none lost. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "formats/pprof_in.h"
#include "formats/pyroscope.h"

struct sums {
	uint64_t samples; /* wrapping, as the encoder's */
	struct fmt_buf q;
};

static int part(void *ctx, const struct pyro_part *p)
{
	struct sums *s = ctx;
	struct pprof_in in = {0};
	const char *open = strchr(p->name, '{');

	if (pprof_in_read(p->profile, p->len, &in) || in.labels.n)
		abort();
	pprof_in_free(&in);
	/* APP{k=v,...}: one brace pair, at the end, no empty application. */
	if (!open || open == p->name || strchr(open + 1, '{') ||
	    strchr(p->name, '}') != p->name + strlen(p->name) - 1)
		abort();
	s->samples += (uint64_t)p->samples;
	s->q.n = 0;
	pyro_query(&s->q, p, "x");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_process proc = {1, "/bin/a,b}", "c=d"};
	struct pyro_meta m = {"h{o}st", NULL, &proc, 1};
	struct sums s = {0};
	struct pprof_in in = {0};
	uint64_t want = 0;
	size_t i;

	if (!pprof_in_read(data, size, &in))
		for (i = 0; i < in.samples.n; i++)
			if (in.samples.v[i].nvals)
				want += (uint64_t)in.values.v[in.samples.v[i].val0];
	if (!pyro_split(data, size, &m, part, &s) && s.samples != want)
		abort();
	pprof_in_free(&in);
	free(s.q.p);
	return 0;
}
