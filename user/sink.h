/* Where a recording goes: the files in the output directory and each push
 * destination (user/push.c) are sinks behind one interface, and a window is
 * the unit handed to them. Today a window is the whole recording, and the
 * files sink comes first: push sinks send profile.pb.gz as it was written,
 * so that what is pushed is what is on disk (as a spool of windows will
 * push from disk). Continuous windows will hand each sink one interval. */
#ifndef USER_SINK_H
#define USER_SINK_H

#include <stdio.h>
#include "user/run_info.h"

struct window {
	const struct run_info *ri; /* the recording; its files are in ri->out */
};

struct sink;
struct sink_ops {
	const char *kind; /* "files", "otlp" */
	/* 0, or -errno after reporting (the files are written or the push
	 * sent either way, as far as they can be). */
	int (*emit)(struct sink *s, const struct window *w);
	/* After the last window (may be NULL): what is still on its way is
	 * sent or set aside. 0, or -errno when something was not delivered. */
	int (*finish)(struct sink *s);
	/* summary.json's entry of the sink, a JSON object (may be NULL). */
	void (*json)(struct sink *s, FILE *f);
	void (*free)(struct sink *s);
};
struct sink {
	const struct sink_ops *ops;
};

#define SINKS_MAX 9 /* the files and 8 push destinations */
struct sinks {
	struct sink *v[SINKS_MAX];
	int n;
};

/* Takes k (NULL: -ENOMEM, from a failed constructor): 0, or -ENOSPC (k
 * freed). */
int sinks_add(struct sinks *s, struct sink *k);
/* Hands w to every sink in the order added, each whatever the others did.
 * 0, or the first -errno. */
int sinks_emit(struct sinks *s, const struct window *w);
/* Every sink's finish: 0, or the first -errno. */
int sinks_finish(struct sinks *s);
/* summary.json's "push": the sinks' entries, in a JSON array (nothing when
 * none has one). */
void sinks_json(const struct sinks *s, FILE *f);
void sinks_free(struct sinks *s);

/* The files of the output directory (output_write). */
struct sink *files_sink_new(void);

#endif
