/* XRay FDR trace writer and reader. Layout: a 32-byte file header, then per
 * thread a run of buffers. Version 5 (compiler-rt's) buffers are
 * BufferExtents(size), NewBuffer(tid), WallClockTime, Pid, NewCPUId(cpu, tsc),
 * records; version 1 buffers end with EndOfBuffer and zero padding. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "formats/util.h"
#include "formats/xray_fdr.h"

enum meta_kind {
	M_NEW_BUFFER = 0,
	M_END_OF_BUFFER = 1,
	M_NEW_CPU = 2,
	M_TSC_WRAP = 3,
	M_WALLTIME = 4,
	M_CUSTOM = 5,
	M_CALL_ARG = 6,
	M_EXTENTS = 7,
	M_TYPED = 8,
	M_PID = 9,
};

#define META	     16
#define CHUNK_EVENTS 1024
#define EV_CPU	     0xff /* kind of a CPU change */

struct ev {
	uint64_t ts;
	uint32_t id;
	uint8_t kind; /* enum fdr_action, or EV_CPU */
	uint8_t nargs;
	uint16_t cpu;
	uint32_t arg0; /* index of the first argument in the chunk's args */
};

struct chunk {
	struct chunk *next;
	uint32_t n, nargs;
	uint32_t *stack; /* the calls open when the chunk began, outermost first */
	uint32_t depth;
	uint16_t cpu; /* the thread's CPU when the chunk began */
	struct ev ev[CHUNK_EVENTS];
	uint64_t args[CHUNK_EVENTS]; /* at most one argument slot per event on average */
};

struct thread {
	int32_t tid;
	struct chunk *head, *tail;
	uint32_t nchunks;
	uint16_t cpu;
	bool have_cpu;
	uint64_t last_ts;
	uint32_t *stack; /* open calls now */
	uint32_t depth;
	size_t stack_cap;
};

struct fdr {
	struct fdr_opts o;
	struct thread *threads;
	size_t nthreads, cap;
	uint64_t events, dropped;
	uint32_t max_chunks; /* per thread; 0: no limit */
};

struct fdr *fdr_new(const struct fdr_opts *o)
{
	struct fdr *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->o = *o;
	if (w->o.version != 1)
		w->o.version = 5;
	if (!w->o.cycle_frequency)
		w->o.cycle_frequency = 1000000000ULL;
	if (!w->o.buffer_size && w->o.version == 1)
		w->o.buffer_size = 65536;
	/* A buffer must hold its opening records, one call with all arguments
	 * and the end: 128 bytes do, rounded to records of 8. */
	if (w->o.buffer_size && w->o.buffer_size < 256)
		w->o.buffer_size = 256;
	w->o.buffer_size &= ~7ULL;
	if (o->flight_recorder_bytes) {
		uint64_t n = o->flight_recorder_bytes / sizeof(struct chunk);

		w->max_chunks = n < 2 ? 2 : n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	}
	return w;
}

static void free_chunk(struct chunk *c)
{
	free(c->stack);
	free(c);
}

void fdr_free(struct fdr *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->nthreads; i++) {
		struct chunk *c = w->threads[i].head, *n;

		for (; c; c = n) {
			n = c->next;
			free_chunk(c);
		}
		free(w->threads[i].stack);
	}
	free(w->threads);
	free(w);
}

static struct thread *get_thread(struct fdr *w, int32_t tid)
{
	size_t i;

	/* Few threads per process; the last one used is the likely one. */
	for (i = w->nthreads; i-- > 0;)
		if (w->threads[i].tid == tid)
			return &w->threads[i];
	if (fmt_grow((void **)&w->threads, &w->cap, w->nthreads + 1, sizeof(*w->threads)))
		return NULL;
	memset(&w->threads[w->nthreads], 0, sizeof(w->threads[0]));
	w->threads[w->nthreads].tid = tid;
	return &w->threads[w->nthreads++];
}

static struct chunk *new_chunk(struct fdr *w, struct thread *t)
{
	struct chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cpu = t->cpu;
	c->depth = t->depth;
	if (t->depth) {
		c->stack = malloc(t->depth * sizeof(*c->stack));
		if (!c->stack) {
			free(c);
			return NULL;
		}
		if (t->depth) /* t->stack is NULL before the first call */
			memcpy(c->stack, t->stack, t->depth * sizeof(*c->stack));
	}
	if (t->tail)
		t->tail->next = c;
	else
		t->head = c;
	t->tail = c;
	t->nchunks++;
	/* The flight recorder: a ring of chunks, the oldest let go. */
	if (w->max_chunks && t->nchunks > w->max_chunks) {
		struct chunk *old = t->head;

		t->head = old->next;
		w->dropped += old->n;
		free_chunk(old);
		t->nchunks--;
	}
	return c;
}

static struct ev *append(struct fdr *w, int32_t tid, uint64_t ts, unsigned nargs,
			 struct thread **tp, struct chunk **cp)
{
	struct thread *t = get_thread(w, tid);
	struct chunk *c;

	if (!t)
		return NULL;
	c = t->tail;
	if (!c || c->n == CHUNK_EVENTS || c->nargs + nargs > CHUNK_EVENTS)
		c = new_chunk(w, t);
	if (!c)
		return NULL;
	if (ts < t->last_ts)
		ts = t->last_ts;
	t->last_ts = ts;
	c->ev[c->n].ts = ts;
	w->events++;
	*tp = t;
	*cp = c;
	return &c->ev[c->n++];
}

static int push_call(struct thread *t, uint32_t id)
{
	if (fmt_grow((void **)&t->stack, &t->stack_cap, t->depth + 1, sizeof(*t->stack)))
		return -ENOMEM;
	t->stack[t->depth++] = id;
	return 0;
}

static void pop_call(struct thread *t, uint32_t id)
{
	uint32_t d = t->depth;

	/* Pop up to the matching entry; an exit with none changes nothing. */
	while (d > 0 && t->stack[d - 1] != id)
		d--;
	if (d > 0)
		t->depth = d - 1;
}

int fdr_func(struct fdr *w, int32_t tid, uint16_t cpu, uint64_t ts, enum fdr_action a,
	     uint32_t func_id, const uint64_t *args, unsigned nargs)
{
	struct thread *t;
	struct chunk *c;
	struct ev *e;
	int err;

	if ((!func_id && a != FDR_EXIT) || func_id > FDR_MAX_FUNC_ID || nargs > FDR_MAX_ARGS)
		return -EINVAL;
	if (!func_id) {
		t = get_thread(w, tid);
		if (!t)
			return -ENOMEM;
		if (!t->depth)
			return 0;
		func_id = t->stack[t->depth - 1];
	}
	if (a == FDR_EXIT || a == FDR_TAIL_EXIT) {
		uint32_t d;

		t = get_thread(w, tid);
		if (!t)
			return -ENOMEM;
		/* Probes race with the calls as they are attached: an exit
		 * whose entry came before tracing did is not written, and
		 * calls inside the exiting one whose own exits were missed are
		 * exited first, so that every entry written has its exit and
		 * the nesting holds for the readers. */
		for (d = t->depth; d > 0 && t->stack[d - 1] != func_id; d--)
			;
		if (!d)
			return 0;
		while (t->depth > d) {
			err = fdr_func(w, tid, cpu, ts, FDR_EXIT, t->stack[t->depth - 1], NULL, 0);
			if (err)
				return err;
		}
	}
	if (a != FDR_ENTRY && a != FDR_ENTRY_ARGS)
		nargs = 0;
	if (nargs)
		a = FDR_ENTRY_ARGS;
	else if (a == FDR_ENTRY_ARGS)
		a = FDR_ENTRY;
	/* A CPU change first: it is a record of its own. */
	t = get_thread(w, tid);
	if (!t)
		return -ENOMEM;
	if (!t->have_cpu || t->cpu != cpu) {
		err = fdr_cpu(w, tid, cpu, ts);
		if (err)
			return err;
	}
	e = append(w, tid, ts, nargs, &t, &c);
	if (!e)
		return -ENOMEM;
	e->kind = a;
	e->id = func_id;
	e->cpu = cpu;
	e->nargs = nargs;
	e->arg0 = c->nargs;
	if (nargs) /* args may be NULL then, which memcpy does not allow */
		memcpy(&c->args[c->nargs], args, nargs * sizeof(*args));
	c->nargs += nargs;
	if (a == FDR_ENTRY || a == FDR_ENTRY_ARGS)
		return push_call(t, func_id);
	pop_call(t, func_id);
	return 0;
}

int fdr_close_open(struct fdr *w, uint64_t ts)
{
	size_t i;
	int err;

	for (i = 0; i < w->nthreads; i++) {
		struct thread *t = &w->threads[i];

		while (t->depth) {
			/* fdr_func may move w->threads (a new thread): it won't here. */
			err = fdr_func(w, t->tid, t->cpu, ts, FDR_EXIT, t->stack[t->depth - 1],
				       NULL, 0);
			if (err)
				return err;
		}
	}
	return 0;
}

int fdr_cpu(struct fdr *w, int32_t tid, uint16_t cpu, uint64_t ts)
{
	struct thread *t;
	struct chunk *c;
	struct ev *e = append(w, tid, ts, 0, &t, &c);

	if (!e)
		return -ENOMEM;
	e->kind = EV_CPU;
	e->cpu = cpu;
	e->id = 0;
	e->nargs = 0;
	t->cpu = cpu;
	t->have_cpu = true;
	return 0;
}

void fdr_get_stats(const struct fdr *w, struct fdr_stats *s)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->events = w->events;
	s->dropped = w->dropped;
	s->threads = w->nthreads;
	for (i = 0; i < w->nthreads; i++)
		s->bytes_held += (uint64_t)w->threads[i].nchunks * sizeof(struct chunk) +
				 w->threads[i].stack_cap * sizeof(uint32_t);
}

/* Encoding of one thread into buffers, written to f as each fills. */
struct enc {
	const struct fdr *w;
	FILE *f;
	struct fmt_buf out; /* the buffer being filled; one at a time */
	int32_t tid;
	uint16_t cpu;
	uint64_t base; /* the TSC deltas are relative to */
	uint64_t nbuf; /* buffers of this thread so far */
};

static void put(struct enc *e, const void *p, size_t n)
{
	fmt_put(&e->out, p, n);
}

static void meta(struct enc *e, enum meta_kind k, const void *data, size_t n)
{
	unsigned char r[META] = {0};

	r[0] = (unsigned char)(k << 1 | 1);
	if (n) /* EndOfBuffer has no data: NULL, which memcpy does not allow */
		memcpy(r + 1, data, n);
	put(e, r, META);
}

static void meta_u64(struct enc *e, enum meta_kind k, uint64_t v)
{
	meta(e, k, &v, sizeof(v));
}

static void new_cpu(struct enc *e, uint16_t cpu, uint64_t ts)
{
	unsigned char d[10];

	memcpy(d, &cpu, 2);
	memcpy(d + 2, &ts, 8);
	meta(e, M_NEW_CPU, d, sizeof(d));
	e->cpu = cpu;
	e->base = ts;
}

static size_t limit(const struct enc *e)
{
	return e->w->o.buffer_size ? e->w->o.buffer_size : SIZE_MAX;
}

static void begin_buffer(struct enc *e, uint16_t cpu, uint64_t ts)
{
	const struct fdr_opts *o = &e->w->o;
	unsigned char wt[12];
	/* llvm-xray orders a thread's buffers with a comparator that needs both
	 * the seconds and the microseconds to grow from one buffer to the
	 * next, so later buffers are stamped start + (n s, n us). */
	uint64_t sec = o->wall_sec + e->nbuf;
	uint32_t usec = (uint32_t)((o->wall_usec + e->nbuf) % 1000000);

	e->out.n = 0;
	if (o->version >= 5)
		meta_u64(e, M_EXTENTS, 0);		/* patched when the buffer ends */
	meta(e, M_NEW_BUFFER, &e->tid, sizeof(e->tid)); /* llvm-xray reads 4 bytes, signed */
	memcpy(wt, &sec, 8);
	memcpy(wt + 8, &usec, 4);
	meta(e, M_WALLTIME, wt, sizeof(wt));
	if (o->version >= 5)
		meta(e, M_PID, &o->pid, sizeof(o->pid));
	new_cpu(e, cpu, ts);
	e->nbuf++;
}

static void end_buffer(struct enc *e)
{
	const struct fdr_opts *o = &e->w->o;

	if (o->version >= 5) {
		uint64_t size = e->out.n - META;

		memcpy(e->out.p + 1, &size, sizeof(size));
	} else {
		static const unsigned char zero[8];

		/* Zero padding after EndOfBuffer reads as ignored records. */
		meta(e, M_END_OF_BUFFER, NULL, 0);
		while (!e->out.err && e->out.n < o->buffer_size)
			put(e, zero, sizeof(zero));
	}
	if (!e->out.err && fwrite(e->out.p, 1, e->out.n, e->f) != e->out.n)
		e->out.err = -EIO;
	e->out.n = 0;
}

/* Makes room for n bytes of records in the current buffer. */
static void room(struct enc *e, size_t n)
{
	size_t end = e->w->o.version == 1 ? META : 0;

	if (e->out.n + n + end > limit(e)) {
		end_buffer(e);
		begin_buffer(e, e->cpu, e->base);
	}
}

static void function(struct enc *e, enum fdr_action a, uint32_t id, uint64_t ts,
		     const uint64_t *args, unsigned nargs)
{
	uint32_t w[2];
	unsigned i;

	room(e, 8 + META * (nargs + 1));
	if (ts - e->base > UINT32_MAX) {
		meta_u64(e, M_TSC_WRAP, ts);
		e->base = ts;
	}
	w[0] = id << 4 | (uint32_t)a << 1;
	w[1] = (uint32_t)(ts - e->base);
	e->base = ts;
	put(e, w, sizeof(w));
	for (i = 0; i < nargs; i++)
		meta_u64(e, M_CALL_ARG, args[i]);
}

/* An 8-byte custom event at the file's first timestamp opens each thread:
 * llvm-xray's account loads threads in hash order and fails on a record
 * older than the first it loaded. The other tools skip custom events. */
static void opening_event(struct enc *e, uint64_t ts)
{
	static const char payload[8] = "bpftrrec";
	unsigned char d[12] = {0};
	int32_t size = sizeof(payload);

	room(e, META + sizeof(payload));
	memcpy(d, &size, 4);
	if (e->w->o.version >= 5) {
		int32_t delta = (int32_t)(ts - e->base); /* 0: the buffer's NewCPUId is at ts */

		memcpy(d + 4, &delta, 4);
	} else {
		memcpy(d + 4, &ts, 8);
	}
	meta(e, M_CUSTOM, d, sizeof(d));
	put(e, payload, sizeof(payload));
	e->base = ts;
}

static int write_thread(const struct fdr *w, const struct thread *t, FILE *f, uint64_t min_ts)
{
	struct enc e = {.w = w, .f = f, .tid = t->tid};
	const struct chunk *c = t->head;
	uint32_t i;

	if (!c)
		return 0;
	begin_buffer(&e, c->cpu, min_ts);
	opening_event(&e, min_ts);
	/* Calls opened before the oldest kept events: entered again, at the
	 * first kept timestamp, so that every exit has its entry. */
	for (i = 0; i < c->depth && c->n; i++)
		function(&e, FDR_ENTRY, c->stack[i], c->ev[0].ts, NULL, 0);
	for (; c; c = c->next) {
		for (i = 0; i < c->n; i++) {
			const struct ev *v = &c->ev[i];

			if (v->kind == EV_CPU) {
				room(&e, META);
				new_cpu(&e, v->cpu, v->ts);
			} else {
				function(&e, v->kind, v->id, v->ts, &c->args[v->arg0], v->nargs);
			}
		}
	}
	end_buffer(&e);
	free(e.out.p);
	return e.out.err;
}

int fdr_write(struct fdr *w, FILE *f)
{
	uint16_t hdr16[2] = {(uint16_t)w->o.version, 1}; /* type 1: FDR */
	uint32_t bits = 3; /* constant_tsc | nonstop_tsc: kernel time is both */
	uint64_t hdr64[3] = {w->o.cycle_frequency, w->o.buffer_size, 0};
	uint64_t min_ts = UINT64_MAX;
	size_t i;
	int err = 0;

	for (i = 0; i < w->nthreads; i++)
		if (w->threads[i].head && w->threads[i].head->n &&
		    w->threads[i].head->ev[0].ts < min_ts)
			min_ts = w->threads[i].head->ev[0].ts;
	if (min_ts == UINT64_MAX)
		return -ENODATA;
	if (fwrite(hdr16, 2, 2, f) != 2 || fwrite(&bits, 4, 1, f) != 1 ||
	    fwrite(hdr64, 8, 3, f) != 3)
		return -EIO;
	for (i = 0; i < w->nthreads && !err; i++)
		err = write_thread(w, &w->threads[i], f, min_ts);
	return err;
}

/* The reader. */
struct rd {
	const unsigned char *p;
	size_t len, off;
	const char *err;
	size_t err_off;
};

static int fail(struct rd *r, const char *why)
{
	r->err = why;
	r->err_off = r->off;
	return -EINVAL;
}

int fdr_read(const void *buf, size_t len, struct fdr_file_info *info, fdr_record_fn fn, void *ctx,
	     const char **err, size_t *err_off)
{
	struct rd r = {buf, len, 32, NULL, 0};
	struct fdr_file_info fi = {0};
	struct fdr_record rec = {0};
	uint16_t version, type;
	uint64_t base = 0, buf_end = 0;
	int state = 0; /* 0: between buffers, 1: after NewBuffer, 2: after WallClockTime, 3: body */
	int ret = 0;

	if (len < 32) {
		r.off = 0;
		ret = fail(&r, "shorter than the file header");
		goto out;
	}
	memcpy(&version, r.p, 2);
	memcpy(&type, r.p + 2, 2);
	memcpy(&fi.cycle_frequency, r.p + 8, 8);
	fi.version = version;
	if (type != 1 || (version != 1 && version != 5)) {
		r.off = 0;
		ret = fail(&r, "not an FDR trace of version 1 or 5");
		goto out;
	}
	if (len == 32) {
		ret = fail(&r, "a header and no buffers");
		goto out;
	}
	while (r.off < len) {
		unsigned char b = r.p[r.off];

		if (version >= 5 && state == 0) {
			uint64_t size;

			if (len - r.off < META || b != (M_EXTENTS << 1 | 1)) {
				ret = fail(&r, "a buffer that does not start with BufferExtents");
				goto out;
			}
			memcpy(&size, r.p + r.off + 1, 8);
			r.off += META;
			if (size > len - r.off || size % 8) {
				ret = fail(&r, "BufferExtents beyond the end of the file");
				goto out;
			}
			buf_end = r.off + size;
			state = 4; /* expecting NewBuffer */
			continue;
		}
		if (version >= 5 && r.off == buf_end && state != 4) {
			state = 0;
			continue;
		}
		if (version == 1 && state == 0 && b == 0) {
			/* Padding after EndOfBuffer: whole zero words. */
			if (len - r.off < 8 || memcmp(r.p + r.off, "\0\0\0\0\0\0\0\0", 8)) {
				ret = fail(&r, "padding that is not zero words");
				goto out;
			}
			r.off += 8;
			continue;
		}
		if (b & 1) {
			unsigned kind = b >> 1;
			const unsigned char *d = r.p + r.off + 1;

			if (len - r.off < META) {
				ret = fail(&r, "a truncated metadata record");
				goto out;
			}
			if ((state == 0 || state == 4) && kind != M_NEW_BUFFER) {
				ret = fail(&r, "a buffer that does not start with NewBuffer");
				goto out;
			}
			if (state == 1 && kind != M_WALLTIME) {
				ret = fail(&r, "NewBuffer not followed by WallClockTime");
				goto out;
			}
			if (state == 2 && kind != M_NEW_CPU && kind != M_PID) {
				ret = fail(&r, "WallClockTime not followed by Pid or NewCPUId");
				goto out;
			}
			switch (kind) {
			case M_NEW_BUFFER:
				memcpy(&rec.tid, d, 4);
				fi.buffers++;
				state = 1;
				break;
			case M_WALLTIME:
				state = 2;
				break;
			case M_PID:
				memcpy(&rec.pid, d, 4);
				break;
			case M_NEW_CPU:
				memcpy(&rec.cpu, d, 2);
				memcpy(&base, d + 2, 8);
				state = 3;
				break;
			case M_TSC_WRAP:
				memcpy(&base, d, 8);
				break;
			case M_END_OF_BUFFER:
				if (version >= 5) {
					ret = fail(&r, "EndOfBuffer in a version 5 trace");
					goto out;
				}
				state = 0;
				break;
			case M_CUSTOM: {
				int32_t size;

				memcpy(&size, d, 4);
				if (version >= 5) {
					int32_t delta;

					memcpy(&delta, d + 4, 4);
					base += delta;
				}
				if (size < 0 || (size_t)size > len - r.off - META) {
					ret = fail(&r, "a custom event beyond the end of the file");
					goto out;
				}
				if (version == 1 && size % 8) {
					ret =
					    fail(&r, "a custom event that breaks the 8-byte grid");
					goto out;
				}
				fi.custom_events++;
				r.off += size;
				break;
			}
			case M_CALL_ARG:
				ret = fail(&r, "a CallArgument that follows no Entry_Args");
				goto out;
			default:
				ret = fail(&r, "an unknown metadata record");
				goto out;
			}
			r.off += META;
		} else {
			uint32_t w[2];

			if (state != 3) {
				ret = fail(&r, "a function record before NewCPUId");
				goto out;
			}
			if (len - r.off < 8) {
				ret = fail(&r, "a truncated function record");
				goto out;
			}
			memcpy(w, r.p + r.off, 8);
			rec.action = (w[0] >> 1) & 7;
			rec.func_id = w[0] >> 4;
			base += w[1];
			rec.ts = base;
			rec.nargs = 0;
			if (rec.action > FDR_ENTRY_ARGS) {
				ret = fail(&r, "an unknown function action");
				goto out;
			}
			r.off += 8;
			while (rec.action == FDR_ENTRY_ARGS && len - r.off >= META &&
			       r.p[r.off] == (M_CALL_ARG << 1 | 1)) {
				if (rec.nargs < FDR_MAX_ARGS)
					memcpy(&rec.args[rec.nargs++], r.p + r.off + 1, 8);
				r.off += META;
			}
			fi.records++;
			if (fn && (ret = fn(ctx, &rec)))
				goto out;
		}
		if (version >= 5 && r.off > buf_end) {
			ret = fail(&r, "a record across the buffer's extents");
			goto out;
		}
	}
	if (version >= 5 ? r.off != buf_end || state == 4 : state != 0)
		ret = fail(&r, "a buffer cut short");
out:
	if (info)
		*info = fi;
	if (err)
		*err = r.err;
	if (err_off)
		*err_off = r.err_off;
	return ret;
}
