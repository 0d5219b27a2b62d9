/* Java frames in the recorded stacks (user/runtime/jvm_names.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include "user/runtime/jvm_names.h"
#include "user/runtime/jvm.h"
#include "user/runtime/jvm_chain.h"
#include "user/proc.h"
#include "user/util.h"

/* A Java frame's pc (SOURCE_PC_BASE and up, user/proc.h): its method (an
 * index into the recording's table) and its line, tagged apart from the
 * Python source's (user/runtime/python_names.c: 1 << 56). A method is its names
 * and file, not a Method*: the same method in two JVMs is one, and an
 * address reused by another method is another. */
#define JVM_PC_TAG	 (SOURCE_PC_BASE | 2ULL << 56)
#define JVM_PC_TAG_MASK	 (0xffULL << 56)
#define JVM_LINE_BITS	 24
#define JVM_PC(fn, line) (JVM_PC_TAG | (uint64_t)(fn) << JVM_LINE_BITS | (uint64_t)(line))
#define JVM_FN_MAX	 (1u << 30)
#define JVM_EXPAND_MAX	 64 /* Java frames one recorded frame stands for */

struct jvm_fn {
	char *name, *sig, *file;
	int first_line;
};

/* A recorded frame named before, by its two words (the object, its
 * cookie, its offset): its pcs, pool[off, off + n). The cookie was checked
 * against the process when it was first named; the same words later are
 * the same object, named without reading the process or hashing names
 * again (a 50-deep Java stack cost ~5 us of the drain a sample without). */
struct jvm_memo {
	uint64_t addr, info;
	uint32_t off, n;
};
#define JVM_MEMO_MAX (1u << 16) /* entries; then it starts over */
#define JVM_POOL_MAX (1u << 20) /* pcs */

struct jvm_pid {
	pid_t pid;
	struct jvm_proc *jp;
	VEC(struct jvm_memo) memo;
	struct idtab memo_tab;
	VEC(uint64_t) pool;
};

static void pid_clear(struct jvm_pid *e)
{
	VEC_FREE(e->memo);
	idtab_free(&e->memo_tab);
	VEC_FREE(e->pool);
}

/* A JVM still starting (its code cache not made when its maps were read):
 * looked at again at its samples, every JVM_RETRY_NS, for as long as it
 * runs; its Java frames meanwhile are named as JIT code. */
#define JVM_RETRY_NS (50 * 1000 * 1000ULL)
struct jvm_pending {
	pid_t pid;
	uint64_t next_ns;
};

struct jvm_names {
	struct jvm *j;
	int procs_fd;
	VEC(struct jvm_fn) fns;
	struct idtab fn_tab;
	VEC(struct jvm_pid) pids;
	VEC(struct jvm_pending) pending;
	struct jvm_names_stats st;
};

int jvm_names_new(struct jvm_names **out, struct jvm *j, int procs_fd)
{
	struct jvm_names *jn = calloc(1, sizeof(*jn));

	if (!jn)
		return -ENOMEM;
	jn->j = j;
	jn->procs_fd = procs_fd;
	*out = jn;
	return 0;
}

void jvm_names_free(struct jvm_names *jn)
{
	if (!jn)
		return;
	for (size_t i = 0; i < jn->fns.n; i++) {
		free(jn->fns.v[i].name);
		free(jn->fns.v[i].sig);
		free(jn->fns.v[i].file);
	}
	VEC_FREE(jn->fns);
	idtab_free(&jn->fn_tab);
	for (size_t i = 0; i < jn->pids.n; i++)
		pid_clear(&jn->pids.v[i]);
	VEC_FREE(jn->pids);
	VEC_FREE(jn->pending);
	free(jn);
}

void jvm_names_get_stats(const struct jvm_names *jn, struct jvm_names_stats *out)
{
	*out = jn ? jn->st : (struct jvm_names_stats){0};
}

int jvm_names_walked(const struct jvm_names *jn, pid_t pid)
{
	return jn && VEC_PID_FIND(jn->pids, pid);
}

void jvm_names_forget(struct jvm_names *jn, pid_t pid)
{
	struct jvm_pid *e;
	__u32 key = (__u32)pid;

	if (jn)
		VEC_PID_DROP(jn->pending, pid);
	if (!jn || !(e = VEC_PID_FIND(jn->pids, pid)))
		return;
	if (jn->procs_fd >= 0)
		bpf_map_delete_elem(jn->procs_fd, &key);
	jvm_forget(jn->j, pid);
	pid_clear(e);
	*e = jn->pids.v[--jn->pids.n];
}

/* A process's maps were read: a JVM whose tables give the walk's layout
 * goes into jvm_procs. One still starting (its code cache not made yet) is
 * looked at again at its next maps. */
static void source_maps_read(void *ctx, struct proc *p)
{
	struct jvm_names *jn = ctx;
	struct jvm_proc *jp;
	struct jvm_bpf_proc val;
	struct jvm_pid e = {.pid = p->pid};
	__u32 key = (__u32)p->pid;
	int err;

	if (!p->maps_text || VEC_PID_FIND(jn->pids, p->pid))
		return;
	err = jvm_attach_maps(jn->j, p->pid, p->maps_text, strlen(p->maps_text), &jp);
	if (err == -EAGAIN) {
		struct jvm_pending q = {p->pid, now_ns(CLOCK_MONOTONIC) + JVM_RETRY_NS}, *o;

		p->jit_walked = true; /* a JVM starting: walked once its code cache is made */
		if ((o = VEC_PID_FIND(jn->pending, p->pid)))
			o->next_ns = q.next_ns;
		else if (VEC_PUSH(jn->pending, q))
			return; /* ENOMEM: named as JIT code */
		return;
	}
	VEC_PID_DROP(jn->pending, p->pid);
	if (err)
		return;
	e.jp = jp;
	jvm_proc_bpf(jp, &val);
	if (jn->procs_fd >= 0 && bpf_map_update_elem(jn->procs_fd, &key, &val, BPF_ANY)) {
		warn("process %d runs a JVM, but it could not be added to the BPF walk: %s; its "
		     "Java frames are not named",
		     (int)p->pid, strerror(errno));
		jvm_forget(jn->j, p->pid);
		return;
	}
	if (VEC_PUSH(jn->pids, e)) {
		bpf_map_delete_elem(jn->procs_fd, &key);
		jvm_forget(jn->j, p->pid);
		return;
	}
	p->jit_walked = true;
}

/* A sample of a JVM still starting: looked at again when it is time. */
static void source_leaf(void *ctx, struct proc *p, const struct frame *leaf)
{
	struct jvm_names *jn = ctx;
	struct jvm_pending *q;

	(void)leaf;
	if (!jn->pending.n || !(q = VEC_PID_FIND(jn->pending, p->pid)) ||
	    now_ns(CLOCK_MONOTONIC) < q->next_ns)
		return;
	source_maps_read(jn, p);
}

static bool fn_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct jvm_fn *f = &((const struct jvm_names *)ctx)->fns.v[id];
	const struct jvm_method *k = key;

	return f->first_line == k->first_line && !strcmp(f->sig, k->sig) &&
	       !strcmp(f->file ? f->file : "", k->file ? k->file : "");
}

/* The method's index in the table, or UINT32_MAX (ENOMEM, or full). */
static uint32_t fn_intern(struct jvm_names *jn, const struct jvm_method *m)
{
	uint64_t h = hash_bytes(m->sig, strlen(m->sig)) ^
		     hash_u64((m->file ? hash_bytes(m->file, strlen(m->file)) : 0) + m->first_line);
	uint32_t id = idtab_find(&jn->fn_tab, h, fn_eq, jn, m);
	struct jvm_fn f;

	if (id != UINT32_MAX || jn->fns.n >= JVM_FN_MAX)
		return id;
	f = (struct jvm_fn){strdup(m->name), strdup(m->sig), m->file ? strdup(m->file) : NULL,
			    m->first_line};
	if (!f.name || !f.sig || (m->file && !f.file) || VEC_PUSH(jn->fns, f))
		goto fail;
	if (idtab_insert(&jn->fn_tab, h, (uint32_t)jn->fns.n - 1)) {
		jn->fns.n--;
		goto fail;
	}
	return (uint32_t)jn->fns.n - 1;
fail:
	free(f.name);
	free(f.sig);
	free(f.file);
	return UINT32_MAX;
}

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct jvm_memo *m = &((const struct jvm_pid *)ctx)->memo.v[id], *k = key;

	return m->addr == k->addr && m->info == k->info;
}

/* The pcs of the recorded frame (addr, info), into out (at most max): their
 * number, 0 when it names nothing now. */
static int frame_pcs(struct jvm_names *jn, struct jvm_pid *e, uint64_t addr, uint64_t info,
		     uint64_t *out, int max)
{
	struct jvm_memo k = {addr, info, 0, 0};
	uint64_t h = hash_u64(addr ^ hash_u64(info));
	uint32_t id = idtab_find(&e->memo_tab, h, memo_eq, e, &k);
	struct jvm_named named[JVM_EXPAND_MAX];
	int n, m = 0;

	if (id != UINT32_MAX) {
		const struct jvm_memo *f = &e->memo.v[id];

		m = (int)f->n < max ? (int)f->n : max;
		memcpy(out, &e->pool.v[f->off], (size_t)m * sizeof(*out));
		jn->st.inlined += f->n > 1 ? f->n - 1 : 0;
		return m;
	}
	bool cut = false;

	n = jvm_frame_names(e->jp, addr, info, named, JVM_EXPAND_MAX);
	if (n < 0)
		return n; /* -ESTALE */
	for (int j = 0; j < n && m < max; j++) {
		cut |= named[j].m == &jvm_chain_cut;
		uint32_t fn = fn_intern(jn, named[j].m);
		int line = named[j].line;

		if (fn == UINT32_MAX)
			continue;
		if (line < 0 || line >= 1 << JVM_LINE_BITS)
			line = 0;
		out[m++] = JVM_PC(fn, line);
	}
	/* Beyond the frame's own method, the cut's mark not counted. */
	jn->st.inlined += m > 1 ? (uint64_t)(m - 1 - cut) : 0;
	jn->st.inline_cut += cut;
	/* A cut chain is not remembered: the read that failed (a method
	 * being unloaded, a copy racing the JIT) may succeed at the next. */
	if (!m || cut)
		return m;
	if (e->memo.n >= JVM_MEMO_MAX || e->pool.n + (size_t)m > JVM_POOL_MAX) {
		e->memo.n = e->pool.n = 0;
		idtab_clear(&e->memo_tab);
	}
	k.off = (uint32_t)e->pool.n;
	k.n = (uint32_t)m;
	for (int j = 0; j < m; j++)
		if (VEC_PUSH(e->pool, out[j]))
			return m; /* ENOMEM: named, not remembered */
	if (!VEC_PUSH(e->memo, k) && idtab_insert(&e->memo_tab, h, (uint32_t)e->memo.n - 1))
		e->memo.n--;
	return m;
}

/* Each recorded frame's user ip (the frame's index in the record) is
 * replaced by the Java frames it stands for, innermost first; a frame that
 * names nothing now keeps its ip. The record's ips are the CFI walk's, in
 * order: an index whose pc is not in the code cache (a stack unwound by
 * DWARF from there on) is left alone. */
static void source_rewrite(void *ctx, struct proc *p, const struct ev_sample *s, uint64_t *pcs,
			   int *n, int max, bool *cut)
{
	struct jvm_names *jn = ctx;
	const __u64 *w = &s->ips[(size_t)s->nkernel + s->nuser + 2 * (size_t)s->npython];
	uint64_t out[MAX_USER_STACK];
	struct jvm_pid *e;
	unsigned nj = s->njvm < JVM_BPF_FRAMES ? s->njvm : JVM_BPF_FRAMES, next = 0;
	int m = 0, i;

	if (!nj)
		return;
	jn->st.samples++;
	jn->st.truncated += !!(s->flags & SAMPLE_JVM_TRUNC);
	if (!(e = VEC_PID_FIND(jn->pids, p->pid)))
		return;
	/* Inlined Java frames may go past --max-stack (max), as they did
	 * before it counted Python frames: whether they count too is the
	 * Java walk's question, not settled here. Only the stack's room
	 * bounds them. */
	(void)max;
	max = MAX_USER_STACK;
	for (i = 0; i < *n && m < max; i++) {
		bool any = false;

		/* The records are in the walk's order, innermost first; a run
		 * of interpreted frames the walk stepped in one call has its
		 * records at one index (bpf/runtime/jvm.bpf.c's JVM_INTERP_RUN),
		 * each a frame of its own. */
		while (next < nj && JVM_FRAME_INDEX(w[2 * next]) < (unsigned)i)
			next++;
		while (m < max && next < nj && JVM_FRAME_INDEX(w[2 * next]) == (unsigned)i &&
		       jvm_in_cache(e->jp, pcs[i])) {
			int k = frame_pcs(jn, e, JVM_FRAME_ADDR(w[2 * next]), w[2 * next + 1],
					  &out[m], max - m);

			if (k < 0) {
				jn->st.gone++;
				k = 0;
			}
			if (!k)
				debug(
				    "process %d: a Java frame not named (kind %u at %#llx, %#llx)",
				    (int)p->pid, JVM_FRAME_KIND(w[2 * next + 1]),
				    (unsigned long long)JVM_FRAME_ADDR(w[2 * next]),
				    (unsigned long long)w[2 * next + 1]);
			next++;
			jn->st.unnamed += !k;
			jn->st.frames += !!k;
			/* Unnamed, the frame keeps a place: the ip (the run's
			 * first frame's, in the same code). */
			if (!k)
				out[m++] = pcs[i];
			m += k;
			any = true;
		}
		if (m >= max && next < nj && JVM_FRAME_INDEX(w[2 * next]) == (unsigned)i)
			*cut = true; /* a run's frames past the room */
		if (!any)
			out[m++] = pcs[i];
	}
	if (i < *n) /* max: the frames after are cut */
		*cut = true;
	memcpy(pcs, out, (size_t)m * sizeof(*pcs));
	*n = m;
}

static bool source_find(void *ctx, struct proc *p, uint64_t pc, uint64_t t, struct name_hit *hit)
{
	const struct jvm_names *jn = ctx;
	uint64_t fn = (pc & ~JVM_PC_TAG_MASK) >> JVM_LINE_BITS;
	const struct jvm_fn *f;

	(void)p;
	(void)t;
	if ((pc & JVM_PC_TAG_MASK) != (JVM_PC_TAG & JVM_PC_TAG_MASK) || pc == TRUNCATED_PC ||
	    fn >= jn->fns.n)
		return false;
	f = &jn->fns.v[fn];
	*hit = (struct name_hit){.name = f->name,
				 .system_name = f->sig,
				 .file = f->file,
				 .line = (int)(pc & ((1u << JVM_LINE_BITS) - 1)),
				 .start_line = f->first_line};
	return true;
}

void jvm_names_source(struct jvm_names *jn, struct name_source *out)
{
	*out = (struct name_source){.ctx = jn,
				    .maps_read = source_maps_read,
				    .find = source_find,
				    .rewrite = source_rewrite,
				    .leaf = source_leaf};
}
