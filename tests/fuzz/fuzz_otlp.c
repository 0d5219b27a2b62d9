/* libFuzzer target: formats/otlp.c's readers. The input is read as an OTLP
 * request (decoded, then every sample's stack and attributes walked by the
 * indices the decoder vouched for), as a pprof profile converted to a
 * request (which must decode again), as the receiver's answers, and as a
 * cgroup file. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "formats/otlp.h"

static size_t walk(const struct otlp_request *q)
{
	size_t i, j, k, l, n = 0;

	for (i = 0; i < q->resources.n; i++)
		for (j = 0; j < q->resources.v[i].profiles.n; j++) {
			const struct otlp_profile *p = &q->resources.v[i].profiles.v[j];

			n += strlen(q->strings.v[p->type]) + strlen(q->strings.v[p->period_unit]);
			for (k = 0; k < p->samples.n; k++) {
				const struct otlp_sample *s = &p->samples.v[k];
				const struct otlp_stack *st = &q->stacks.v[s->stack];

				for (l = 0; l < st->locs.n; l++) {
					const struct otlp_location *lo =
					    &q->locations.v[st->locs.v[l]];

					if (lo->lines.n)
						n += strlen(
						    q->strings
							.v[q->functions.v[lo->lines.v[0].function]
							       .name]);
					if (lo->mapping)
						n += strlen(
						    q->strings
							.v[q->mappings.v[lo->mapping].filename]);
				}
				for (l = 0; l < s->attrs.n; l++)
					n += strlen(q->strings.v[q->attrs.v[s->attrs.v[l]].key]);
			}
		}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct otlp_process proc = {1, "/bin/x", NULL};
	struct otlp_meta m = {"h", NULL, "v", &proc, 1};
	struct otlp_request q;
	struct otlp_stats st;
	struct fmt_buf out = {0};
	char msg[128], id[65];
	int64_t rejected;

	if (!otlp_decode(data, size, &q, NULL))
		walk(&q);
	otlp_request_free(&q);
	if (!otlp_from_pprof(data, size, &m, &out, &st)) {
		/* What the encoder makes, its decoder reads. */
		if (otlp_decode(out.p, out.n, &q, NULL))
			abort();
		walk(&q);
		otlp_request_free(&q);
	}
	free(out.p);
	otlp_decode_response(data, size, &rejected, msg, sizeof(msg));
	otlp_decode_status(data, size, msg, sizeof(msg));
	otlp_container_id((const char *)data, size, id);
	return 0;
}
