/* --window SECONDS: continuous mode. The recording goes on until a signal
 * (or -d), and every SECONDS the recorder closes a window: a complete
 * profile of that interval, handed to the sinks (user/sink.h) as the whole
 * recording is otherwise. This object holds what the windows share: their
 * period and count, the directory of the one being written
 * (OUTDIR/window-<UTC start>/), and --retain's rotation of those on disk.
 * Created in rec_load, held by the recorder; the recorder's drain closes a
 * window as one of its steps (record.c: rec_window). */
#ifndef USER_CONTINUOUS_H
#define USER_CONTINUOUS_H

#include <stdbool.h>
#include <stdint.h>
#include "user/outdir.h"

/* --retain count=N,age=SECONDS,size=BYTES: any of them, 0 when not set. */
struct retain {
	uint64_t count, age_s, bytes;
};

struct continuous;

/* root: the output directory, open. 0 or -ENOMEM. */
int cont_new(uint64_t period_ns, const struct retain *keep, struct outdir *root,
	     struct continuous **out);
void cont_free(struct continuous *c);

/* The window's period. */
uint64_t cont_period_ns(const struct continuous *c);

/* The directory of a window that started at start_realtime_ns (UTC):
 * OUTDIR/window-YYYYMMDDTHHMMSSZ (with -N when that second has one),
 * created and opened as the output directory is (outdir_open), its path
 * in *path (the object's, valid until the next call). The outdir, or NULL
 * after a one-line error naming the directory. */
struct outdir *cont_window_dir(struct continuous *c, uint64_t start_realtime_ns, const char **path);
/* The window's directory written: closed, and --retain applied to the
 * window directories (the oldest removed first; never the one just
 * written). The number removed. */
unsigned cont_window_done(struct continuous *c);

/* "count=N,age=SECONDS,size=BYTES" (any of them, sizes with K, M, G): 0, or
 * -EINVAL with *why set to what is wrong. */
int cont_parse_retain(const char *s, struct retain *r, const char **why);

#endif
