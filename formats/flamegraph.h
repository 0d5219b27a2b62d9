/* A flame graph of a formats/folded.h tree as one self-contained HTML page:
 * its script, style and data inline, nothing fetched (a Content Security
 * Policy of default-src 'none' forbids it), so it opens from disk in any
 * browser. Click to zoom, search (regular expression) with the matches'
 * share, tooltips with name, samples and percentage. Plain C: see
 * tests/unit/test_flamegraph.c. */
#ifndef FORMATS_FLAMEGRAPH_H
#define FORMATS_FLAMEGRAPH_H

#include <stdio.h>
#include "formats/folded.h"

/* Frames under this share of all samples are left out of the file (their
 * samples still count in their callers' boxes). The page draws no box
 * narrower than FLAMEGRAPH_MIN_DRAWN of the frame zoomed into. */
#define FLAMEGRAPH_MIN_KEPT  0.0001
#define FLAMEGRAPH_MIN_DRAWN 0.001

/* title: a line above the graph (any text: it is escaped); unit: what the
 * totals count ("samples" when NULL; "us" for times), plain ASCII. 0,
 * -ENOMEM or -EIO. */
int flamegraph_write_html(const struct flame *fl, const char *title, const char *unit, FILE *f);

/* s as a JSON string that is also safe inside an HTML <script> element:
 * '<', '>' and '&' escaped too, so no "</script>" or "<!--" can end or
 * change it. s must be valid UTF-8 (folded names are). */
void flamegraph_json_str(FILE *f, const char *s);

#endif
