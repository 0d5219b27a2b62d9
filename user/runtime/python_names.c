/* Python frames in the recorded stacks (user/runtime/python_names.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "user/runtime/python_names.h"
#include "user/proc.h"
#include "user/runtime/python.h"
#include "user/util.h"

/* A Python frame's pc (SOURCE_PC_BASE and up, user/proc.h): its function
 * (an index into the recording's table) and its line. A function is a
 * (name, file, first line), not a code object's address: an address freed
 * and reused by another code object is another function, and the same
 * function's code object in two processes (a server's forks) is one. */
#define PY_PC_TAG	(SOURCE_PC_BASE | 1ULL << 56)
#define PY_PC_TAG_MASK	(0xffULL << 56)
#define PY_LINE_BITS	24
#define PY_PC(fn, line) (PY_PC_TAG | (uint64_t)(fn) << PY_LINE_BITS | (uint64_t)(line))
#define PY_FN_MAX	(1u << 30)

struct py_fn {
	char *name, *file; /* sanitized */
	int first_line;
};

/* A process walked in BPF: its interpreter (user/runtime/python.c owns it) and its
 * evaluation loop's place. */
/* A frame seen before, by its code object, tag and instruction: its pc.
 * The tag is the object's at the sample, checked against the object read
 * then; the same (address, tag) later is the same object, and its names
 * are had without reading the process again (each read is a system call:
 * a 22-deep stack cost 105 us of the drain per sample without this). */
struct py_memo {
	uint64_t code, raw, pc; /* raw: the lasti word with its tag */
};
#define PY_MEMO_MAX (1u << 16) /* then it starts over */

struct py_pid {
	pid_t pid;
	struct py_proc *py;
	uint64_t eval_lo, eval_hi;
	VEC(struct py_memo) memo;
	struct idtab memo_tab;
};

struct py_names {
	struct python *py;
	int procs_fd;
	VEC(struct py_fn) fns;
	struct idtab fn_tab;
	VEC(struct py_pid) pids;
	struct idtab pid_tab;
	struct py_names_stats st;
	struct py_runs *runs; /* source_rewrite's */
};

int py_names_new(struct py_names **out, struct python *py, int procs_fd)
{
	struct py_names *pn = calloc(1, sizeof(*pn));

	if (!pn)
		return -ENOMEM;
	pn->py = py;
	pn->procs_fd = procs_fd;
	*out = pn;
	return 0;
}

void py_names_free(struct py_names *pn)
{
	if (!pn)
		return;
	for (size_t i = 0; i < pn->fns.n; i++) {
		free(pn->fns.v[i].name);
		free(pn->fns.v[i].file);
	}
	VEC_FREE(pn->fns);
	idtab_free(&pn->fn_tab);
	for (size_t i = 0; i < pn->pids.n; i++) {
		VEC_FREE(pn->pids.v[i].memo);
		idtab_free(&pn->pids.v[i].memo_tab);
	}
	VEC_FREE(pn->pids);
	idtab_free(&pn->pid_tab);
	free(pn->runs);
	free(pn);
}

void py_names_get_stats(const struct py_names *pn, struct py_names_stats *out)
{
	*out = pn ? pn->st : (struct py_names_stats){0};
}

static bool pid_eq(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct py_names *)ctx)->pids.v[id].pid == *(const pid_t *)key;
}

static struct py_pid *pid_find(struct py_names *pn, pid_t pid)
{
	uint32_t id = idtab_find(&pn->pid_tab, hash_u64((uint64_t)pid), pid_eq, pn, &pid);

	return id == UINT32_MAX ? NULL : &pn->pids.v[id];
}

/* The table by pid again, after one left (its ids moved). */
static void pid_reindex(struct py_names *pn)
{
	idtab_clear(&pn->pid_tab);
	for (size_t i = 0; i < pn->pids.n; i++)
		if (idtab_insert(&pn->pid_tab, hash_u64((uint64_t)pn->pids.v[i].pid), (uint32_t)i))
			break; /* ENOMEM: those left are not walked */
}

void py_names_forget(struct py_names *pn, pid_t pid)
{
	struct py_pid *e;
	__u32 key = (__u32)pid;

	if (!pn || !(e = pid_find(pn, pid)))
		return;
	if (pn->procs_fd >= 0)
		bpf_map_delete_elem(pn->procs_fd, &key);
	python_forget(pn->py, pid);
	VEC_FREE(e->memo);
	idtab_free(&e->memo_tab);
	*e = pn->pids.v[--pn->pids.n];
	pid_reindex(pn);
}

/* A process's maps were read: a CPython with a layout goes into py_procs. */
static void source_maps_read(void *ctx, struct proc *p)
{
	struct py_names *pn = ctx;
	struct py_proc *py;
	struct py_bpf_proc val;
	struct py_pid e = {.pid = p->pid};
	__u32 key = (__u32)p->pid;

	if (!p->maps_text || pid_find(pn, p->pid) ||
	    python_attach_maps(pn->py, p->pid, p->maps_text, strlen(p->maps_text), &py))
		return;
	e.py = py;
	py_proc_eval(py, &e.eval_lo, &e.eval_hi);
	py_proc_bpf(py, &val);
	if (pn->procs_fd >= 0 && bpf_map_update_elem(pn->procs_fd, &key, &val, BPF_ANY)) {
		warn("process %d runs CPython, but it could not be added to the BPF walk: %s; its "
		     "Python frames are not recorded",
		     (int)p->pid, strerror(errno));
		return;
	}
	/* On ENOMEM its samples are walked and left native. */
	if (!VEC_PUSH(pn->pids, e) &&
	    idtab_insert(&pn->pid_tab, hash_u64((uint64_t)e.pid), (uint32_t)pn->pids.n - 1))
		pn->pids.n--;
}

struct fn_key {
	const char *name, *file;
	int first_line;
};

static bool fn_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_fn *f = &((const struct py_names *)ctx)->fns.v[id];
	const struct fn_key *k = key;

	return f->first_line == k->first_line && !strcmp(f->name, k->name) &&
	       !strcmp(f->file, k->file);
}

/* The function's index in the table, or UINT32_MAX (ENOMEM, or full). */
static uint32_t fn_intern(struct py_names *pn, const struct py_code *c)
{
	char name[512], file[1024];
	struct fn_key k = {name, file, c->firstlineno};
	uint64_t h;
	uint32_t id;
	struct py_fn f;

	fmt_sanitize(name, sizeof(name), c->name, strlen(c->name));
	fmt_sanitize(file, sizeof(file), c->file, strlen(c->file));
	h = hash_bytes(name, strlen(name)) ^
	    hash_u64(hash_bytes(file, strlen(file)) + k.first_line);
	id = idtab_find(&pn->fn_tab, h, fn_eq, pn, &k);
	if (id != UINT32_MAX || pn->fns.n >= PY_FN_MAX)
		return id;
	f = (struct py_fn){strdup(name), strdup(file), c->firstlineno};
	if (!f.name || !f.file || VEC_PUSH(pn->fns, f)) {
		free(f.name);
		free(f.file);
		return UINT32_MAX;
	}
	if (idtab_insert(&pn->fn_tab, h, (uint32_t)pn->fns.n - 1)) {
		pn->fns.n--;
		free(f.name);
		free(f.file);
		return UINT32_MAX;
	}
	return (uint32_t)pn->fns.n - 1;
}

/* A frame of the record as a pc, or 0 when its code object is not one
 * (freed, overwritten: the cache's validation, user/runtime/python.c). */
static uint64_t frame_pc(struct py_names *pn, struct py_proc *py, const struct py_frame *f,
			 uint32_t tag)
{
	const struct py_code *c;
	uint32_t fn;
	int line = 0;

	/* Not the object the sample saw: freed and reused since. */
	if (py_code_get(py, f->code, &c) || c->tag != tag || (fn = fn_intern(pn, c)) == UINT32_MAX)
		return 0;
	if (py_code_line(py, c, f->lasti, &line) || line < 0 || line >= 1 << PY_LINE_BITS)
		line = 0;
	return PY_PC(fn, line);
}

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct py_memo *m = &((const struct py_pid *)ctx)->memo.v[id], *k = key;

	return m->code == k->code && m->raw == k->raw;
}

/* frame_pc, remembered by (code object, lasti word with its tag). */
static uint64_t memo_pc(struct py_names *pn, struct py_pid *e, uint64_t code, uint64_t raw,
			const struct py_frame *f, uint32_t tag)
{
	struct py_memo k = {code, raw, 0};
	uint64_t h = hash_u64(code ^ hash_u64(raw));
	uint32_t id = idtab_find(&e->memo_tab, h, memo_eq, e, &k);

	if (id != UINT32_MAX)
		return e->memo.v[id].pc;
	k.pc = frame_pc(pn, e->py, f, tag);
	if (!k.pc) /* not named now: maybe later (a table read again) */
		return 0;
	if (e->memo.n >= PY_MEMO_MAX) {
		e->memo.n = 0;
		idtab_clear(&e->memo_tab);
	}
	if (!VEC_PUSH(e->memo, k) && idtab_insert(&e->memo_tab, h, (uint32_t)e->memo.n - 1))
		e->memo.n--;
	return k.pc;
}

/* The record's Python frames, read run by run: runs[i] is the i-th
 * evaluation call's, innermost first, its frames pcs[at, at + k). */
struct py_run {
	unsigned at, k;
	bool named; /* a frame of it named */
	/* It ended with the frames, not at its evaluation call's first
	 * frame: where the walk was cut (SAMPLE_PY_TRUNC), the frames it did
	 * not reach would go on with it. */
	bool open;
};
struct py_runs {
	struct py_names *pn;
	struct py_pid *e;
	const __u64 *w; /* two words a frame (struct py_bpf_frame) */
	unsigned n, next, nruns, npcs;
	int minor;
	/* The frame the innermost evaluation call enters or leaves, not
	 * linked (the walk's last, PY_OWNER_PENDING): its pc, or 0. */
	uint64_t pending;
	uint64_t pcs[PY_BPF_FRAMES];
	struct py_run runs[PY_BPF_FRAMES];
};

/* The frames one evaluation call runs, from next on, as pcs into r->pcs:
 * one frame up to 3.10; from 3.11 several, up to and including the one
 * with is_entry (3.11), or up to the C stack's shim frame (3.12 on, which
 * py_frame_decode says is one). False when none is left. A shim first
 * ends an empty run: that call's frames are all popped (from its last
 * frame's return to its own), or none is pushed yet. A frame whose code
 * object is not the one the sample saw (freed and reused, or not a code
 * object) is a 0 pc, never named wrongly: the caller puts the native
 * frame there. */
static bool next_run(struct py_runs *r)
{
	struct py_run *run = &r->runs[r->nruns];

	if (r->next >= r->n || r->nruns >= PY_BPF_FRAMES)
		return false;
	*run = (struct py_run){.at = r->npcs, .open = true};
	while (r->next < r->n) {
		uint64_t code = r->w[2 * r->next], pc;
		struct py_frame f;
		int shim = py_frame_decode(r->e->py, PY_FRAME_CODE(code), r->w[2 * r->next + 1],
					   PY_FRAME_OWNER(code), &f);

		r->next++;
		if (shim == 1) {
			run->open = false;
			break;
		}
		pc = memo_pc(r->pn, r->e, code & ((1ULL << PY_FRAME_OWNER_SHIFT) - 1),
			     r->w[2 * r->next - 1], &f, PY_FRAME_TAG(code, r->w[2 * r->next - 1]));
		run->named |= !!pc;
		r->pn->st.unnamed += !pc;
		r->pcs[r->npcs++] = pc;
		run->k++;
		if (r->minor <= 10 || (r->minor == 11 && (code & PY_FRAME_ENTRY))) {
			run->open = false;
			break;
		}
	}
	r->nruns++;
	return true;
}

static bool in_eval(const struct py_pid *e, const uint64_t *pcs, int i)
{
	uint64_t a = i ? pcs[i] - 1 : pcs[i];

	return a >= e->eval_lo && a < e->eval_hi;
}

/* Each native _PyEval_EvalFrameDefault frame is replaced by the Python
 * frames it was running (a run, above), innermost first. Native frames of
 * C extensions and builtins stay where they are.
 *
 * Which evaluation frame runs which run: counted from the root when both
 * stacks are whole. Only the innermost evaluation call can be without its
 * frames linked into the thread's state, as it enters (its prologue, up
 * to where it links the frame it was given: 3.8-3.10 tstate->frame, 3.11
 * on the cframe's or thread's current frame) or leaves (from its last
 * frame's pop: _PyEvalFrameClearAndPop, _PyFrame_ClearExceptCode, its
 * epilogue): counted from the leaf, each level took its caller's frames
 * there and the outermost evaluation frame none. That one evaluation
 * frame, with no run or an empty one, stays native: the interpreter is in
 * its C code, with no Python frame of its own (python3.12 -X perf shows
 * the function entered or left by its trampoline's frame, outside it).
 * Counted from the leaf when the native walk was cut (--max-stack) or did
 * not reach the root (more runs than evaluation frames), or the Python
 * walk was cut (SAMPLE_PY_TRUNC).
 *
 * A stack of more than max frames so is cut at max; one whose Python
 * frames the walk did not all read (deeper than --max-stack, or a frame
 * not readable) where they end: the evaluation frames beyond would stand,
 * unnamed, for the Python frames not read, as if the stack were whole. */
static void source_rewrite(void *ctx, struct proc *p, const struct ev_sample *s, uint64_t *pcs,
			   int *n, int max, bool *cut)
{
	struct py_names *pn = ctx;
	struct py_runs *r;
	uint64_t out[MAX_USER_STACK];
	int m = 0, i, nev = 0, ev = 0, skip = 0;
	bool merged = false, trunc = s->flags & SAMPLE_PY_TRUNC;
	unsigned used = 0;

	/* None read, the walk cut at its first frame (SAMPLE_PY_TRUNC: the
	 * thread's frame not readable, as where an evaluation call's cframe
	 * is new and its fields not set yet, their old values pointing at
	 * freed stack): cut at the innermost evaluation frame, as any cut
	 * walk is, not left whole with every evaluation frame unnamed. */
	if (!s->npython && !trunc)
		return;
	/* 160 KiB, the recording's one (the rewrite is the drain's) */
	if (!pn->runs && !(pn->runs = malloc(sizeof(*pn->runs))))
		return;
	r = pn->runs;
	r->n = s->npython < PY_BPF_FRAMES ? s->npython : PY_BPF_FRAMES;
	pn->st.samples++;
	pn->st.truncated += trunc;
	if (!(r->e = pid_find(pn, p->pid)))
		return;
	r->pn = pn;
	r->w = &s->ips[(size_t)s->nkernel + s->nuser];
	r->next = r->nruns = r->npcs = 0;
	r->minor = py_proc_binary(r->e->py)->minor;
	r->pending = 0;
	if (r->n && PY_FRAME_OWNER(r->w[2 * r->n - 2]) == PY_OWNER_PENDING) {
		uint64_t code = r->w[2 * r->n - 2], raw = r->w[2 * r->n - 1];
		struct py_frame f;

		r->n--;
		if (py_frame_decode(r->e->py, PY_FRAME_CODE(code), raw, PY_FRAME_OWNER(code), &f) ==
		    2)
			r->pending = memo_pc(pn, r->e, code & ((1ULL << PY_FRAME_OWNER_SHIFT) - 1),
					     raw, &f, PY_FRAME_TAG(code, raw));
	}
	while (next_run(r))
		;
	if (max > MAX_USER_STACK)
		max = MAX_USER_STACK;
	for (i = 0; i < *n; i++)
		nev += in_eval(r->e, pcs, i);
	/* From the root: the innermost evaluation frames beyond the runs
	 * have none. */
	if (!trunc && !*cut && r->nruns <= (unsigned)nev) {
		skip = nev - (int)r->nruns;
		pn->st.edge += (skip > 0 || (r->nruns && !r->runs[0].k)) && !r->pending;
	}
	for (i = 0; i < *n && m < max; i++) {
		const struct py_run *run;

		if (!in_eval(r->e, pcs, i)) {
			out[m++] = pcs[i];
			continue;
		}
		if (ev++ < skip) {
			/* The innermost, entering or leaving the frame the
			 * walk found unlinked on the data stack. */
			out[m++] = ev == 1 && r->pending ? r->pending : pcs[i];
			continue;
		}
		if (used >= r->nruns) {
			if (trunc)
				break; /* its frames are those the walk did not reach */
			out[m++] = pcs[i];
			continue;
		}
		run = &r->runs[used++];
		if (!run->named) { /* none (an empty run), or none named */
			out[m++] = ev == 1 && !run->k && r->pending ? r->pending : pcs[i];
		} else {
			unsigned j;

			/* One native frame for the frames not named (in a
			 * row): what runs them. */
			for (j = 0; j < run->k && m < max; j++) {
				const uint64_t *f = &r->pcs[run->at + j];

				if (f[0] || !j || f[-1])
					out[m++] = f[0] ? f[0] : pcs[i];
			}
			pn->st.frames += run->k;
			merged = true;
			if (j < run->k || (run->open && trunc))
				break;
		}
	}
	if (i < *n) {
		/* Cut here: what the record has beyond is not put back. */
		*cut = true;
		used = r->nruns;
	}
	/* Python frames left when the native stack has no evaluation frame
	 * for them: the native walk failed (one cut at --max-stack ends
	 * there, in [truncated]). They are the outermost callers of what was
	 * walked, so they go at the root end, where a reader looks for
	 * <module>; what is missing is the native frames between them and
	 * the walked ones. */
	for (; used < r->nruns && !*cut; used++) {
		const struct py_run *run = &r->runs[used];

		if (!run->named)
			continue;
		pn->st.leftover++;
		for (unsigned j = 0; j < run->k; j++) {
			if (m >= max) {
				*cut = true;
				break;
			}
			if (r->pcs[run->at + j]) /* no native frame to put for one not named */
				out[m++] = r->pcs[run->at + j];
		}
		pn->st.frames += run->k;
		merged = true;
	}
	pn->st.merged += merged;
	memcpy(pcs, out, (size_t)m * sizeof(*pcs));
	*n = m;
}

static bool source_find(void *ctx, struct proc *p, uint64_t pc, uint64_t t, struct name_hit *hit)
{
	const struct py_names *pn = ctx;
	uint64_t fn = (pc & ~PY_PC_TAG_MASK) >> PY_LINE_BITS;
	const struct py_fn *f;

	(void)p;
	(void)t;
	if ((pc & PY_PC_TAG_MASK) != (PY_PC_TAG & PY_PC_TAG_MASK) || pc == TRUNCATED_PC ||
	    fn >= pn->fns.n)
		return false;
	f = &pn->fns.v[fn];
	*hit = (struct name_hit){.name = f->name,
				 .file = f->file,
				 .line = (int)(pc & ((1u << PY_LINE_BITS) - 1)),
				 .start_line = f->first_line};
	return true;
}

void py_names_source(struct py_names *pn, struct name_source *out)
{
	*out = (struct name_source){.ctx = pn,
				    .maps_read = source_maps_read,
				    .find = source_find,
				    .rewrite = source_rewrite};
}
