/* JavaScript frames in the recorded stacks (user/runtime/v8_names.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "user/proc.h"
#include "user/util.h"
#include "user/runtime/v8.h"
#include "user/runtime/v8_names.h"

/* A JavaScript frame's pc (SOURCE_PC_BASE and up, user/proc.h): its
 * function (an index into the recording's table) and its line, tagged
 * apart from Python's (1 << 56) and Java's (2 << 56). A function is its
 * name and script, not an address: the GC moves objects. */
#define V8_PC_TAG	(SOURCE_PC_BASE | 3ULL << 56)
#define V8_PC_TAG_MASK	(0xffULL << 56)
#define V8_LINE_BITS	24
#define V8_PC(fn, line) (V8_PC_TAG | (uint64_t)(fn) << V8_LINE_BITS | (uint64_t)(line))
#define V8_FN_MAX	(1u << 30)

struct v8_fn {
	char *name, *file;
	int start_line;
};

/* An optimized frame's functions as last read, by its pc and record: a
 * recursion's frames, and a hot loop's, are read once (a table read and a
 * scan each). Direct-mapped; n 0: no code found (named as recorded). */
#define V8_MEMO_BITS 10
#define V8_MEMO_FNS  8
struct v8_memo {
	uint64_t pc, addr, info;
	bool leaf;
	uint32_t n;
	uint64_t pcs[V8_MEMO_FNS];
};

struct v8_pid {
	pid_t pid;
	struct v8_proc *vp;
	struct v8_memo *memo; /* 1 << V8_MEMO_BITS, or NULL (ENOMEM: not remembered) */
};

/* A process where no V8 was found yet, or not read: a node whose libnode
 * ld.so has not mapped yet, a map_files open that raced its exec. Looked
 * at again at its maps re-reads and at its samples, every V8_RETRY_NS, for
 * V8_RETRY_FOR_NS after it was first looked at (a process that is no node
 * is not looked at all along); its frames meanwhile stay native. */
#define V8_RETRY_NS	(50 * 1000 * 1000ULL)
#define V8_RETRY_FOR_NS (3 * 1000 * 1000 * 1000ULL)
struct v8_pending {
	pid_t pid;
	uint64_t next_ns, until_ns;
};

struct v8_names {
	struct v8 *v;
	int procs_fd;
	VEC(struct v8_fn) fns;
	struct idtab fn_tab;
	VEC(struct v8_pid) pids;
	VEC(pid_t) refused; /* looked at: no V8 after V8_RETRY_FOR_NS, or one not walked */
	VEC(struct v8_pending) pending;
	struct v8_names_stats st;
	/* The tests' cross-check (BPFTRACE_REC_V8_CROSSCHECK=FILE): a node
	 * writing a perf map is walked too, and each frame in V8's code space
	 * named is written there, "PID PC NAME" (the frame's own function),
	 * for tests/integration/test_node.sh to compare with the perf map. */
	FILE *xcheck;
};

int v8_names_new(struct v8_names **out, struct v8 *v, int procs_fd)
{
	struct v8_names *vn = calloc(1, sizeof(*vn));

	if (!vn)
		return -ENOMEM;
	vn->v = v;
	vn->procs_fd = procs_fd;
	if (getenv("BPFTRACE_REC_V8_CROSSCHECK") &&
	    !(vn->xcheck = fopen(getenv("BPFTRACE_REC_V8_CROSSCHECK"), "we")))
		warn("BPFTRACE_REC_V8_CROSSCHECK: %s", strerror(errno));
	*out = vn;
	return 0;
}

void v8_names_free(struct v8_names *vn)
{
	if (!vn)
		return;
	for (size_t i = 0; i < vn->fns.n; i++) {
		free(vn->fns.v[i].name);
		free(vn->fns.v[i].file);
	}
	VEC_FREE(vn->fns);
	idtab_free(&vn->fn_tab);
	for (size_t i = 0; i < vn->pids.n; i++)
		free(vn->pids.v[i].memo);
	VEC_FREE(vn->pids);
	VEC_FREE(vn->refused);
	VEC_FREE(vn->pending);
	if (vn->xcheck)
		fclose(vn->xcheck);
	free(vn);
}

void v8_names_get_stats(const struct v8_names *vn, struct v8_names_stats *out)
{
	*out = vn ? vn->st : (struct v8_names_stats){0};
}

int v8_names_walked(const struct v8_names *vn, pid_t pid)
{
	return vn && VEC_PID_FIND(vn->pids, pid);
}

void v8_names_forget(struct v8_names *vn, pid_t pid)
{
	struct v8_pid *e;
	__u32 key = (__u32)pid;

	if (!vn)
		return;
	VEC_PID_DROP(vn->pending, pid);
	for (size_t i = 0; i < vn->refused.n; i++)
		if (vn->refused.v[i] == pid)
			vn->refused.v[i--] = vn->refused.v[--vn->refused.n];
	if (!(e = VEC_PID_FIND(vn->pids, pid)))
		return;
	if (vn->procs_fd >= 0)
		bpf_map_delete_elem(vn->procs_fd, &key);
	v8_forget(vn->v, pid);
	free(e->memo);
	*e = vn->pids.v[--vn->pids.n];
}

/* Whether node was started to write a perf map or a jitdump (--perf-prof,
 * --perf-basic-prof...): its frames are named from those (user/jit.c),
 * which the user asked for and which carry lines. */
static bool writes_perf_map(pid_t pid)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	bool yes = false;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	if (!access(path, F_OK))
		return true;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (read_path_all(path, O_RDONLY, 1 << 16, &buf, &len))
		return false;
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		if (!strncmp(buf + i, "--perf-prof", 11) ||
		    !strncmp(buf + i, "--perf-basic-prof", 17))
			yes = true;
	free(buf);
	return yes;
}

/* A process's maps were read: a V8 whose metadata gives the step's layout
 * goes into v8_procs. Its code needs no maps of its own (bpf/runtime/v8.h): one
 * look is enough. */
static void source_maps_read(void *ctx, struct proc *p)
{
	struct v8_names *vn = ctx;
	struct v8_proc *vp;
	struct v8_bpf_proc val;
	struct v8_pid e = {.pid = p->pid};
	__u32 key = (__u32)p->pid;
	int err;

	if (!p->maps_text || VEC_PID_FIND(vn->pids, p->pid))
		return;
	for (size_t i = 0; i < vn->refused.n; i++)
		if (vn->refused.v[i] == p->pid)
			return;
	err = v8_attach_maps(vn->v, p->pid, p->maps_text, strlen(p->maps_text), &vp);
	if (!err && !vn->xcheck && writes_perf_map(p->pid)) {
		debug("process %d runs V8 and writes a perf map: its JavaScript frames are named "
		      "from it",
		      (int)p->pid);
		v8_forget(vn->v, p->pid);
		err = -EEXIST;
	}
	if (err && err != -ENOTSUP && err != -EEXIST) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		struct v8_pending q = {p->pid, now + V8_RETRY_NS, now + V8_RETRY_FOR_NS}, *o;

		if (!(o = VEC_PID_FIND(vn->pending, p->pid))) {
			VEC_PUSH(vn->pending, q); /* ENOMEM: looked at at its next maps */
			return;
		}
		if (now < o->until_ns) {
			o->next_ns = q.next_ns;
			return;
		}
		VEC_PID_DROP(vn->pending, p->pid);
		debug("process %d: no V8 found in %llu ms: not looked at again", (int)p->pid,
		      (unsigned long long)(V8_RETRY_FOR_NS / 1000000));
	}
	if (err) {
		VEC_PUSH(vn->refused, p->pid); /* ENOMEM: looked at again */
		return;
	}
	VEC_PID_DROP(vn->pending, p->pid);
	e.vp = vp;
	v8_proc_bpf(vp, &val);
	if (vn->procs_fd >= 0 && bpf_map_update_elem(vn->procs_fd, &key, &val, BPF_ANY)) {
		warn("process %d runs V8, but it could not be added to the BPF walk: %s; its "
		     "JavaScript frames are not named",
		     (int)p->pid, strerror(errno));
		v8_forget(vn->v, p->pid);
		return;
	}
	e.memo = calloc(1u << V8_MEMO_BITS, sizeof(*e.memo));
	if (VEC_PUSH(vn->pids, e)) {
		free(e.memo);
		bpf_map_delete_elem(vn->procs_fd, &key);
		v8_forget(vn->v, p->pid);
	}
}

/* A sample of a process where no V8 was found yet: looked at again when it
 * is time (its maps as last read: a library mapped since re-reads them). */
static void source_leaf(void *ctx, struct proc *p, const struct frame *leaf)
{
	struct v8_names *vn = ctx;
	struct v8_pending *q;

	(void)leaf;
	if (!vn->pending.n || !(q = VEC_PID_FIND(vn->pending, p->pid)) ||
	    now_ns(CLOCK_MONOTONIC) < q->next_ns)
		return;
	source_maps_read(vn, p);
}

static bool fn_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct v8_fn *f = &((const struct v8_names *)ctx)->fns.v[id];
	const struct v8_function *k = key;

	return f->start_line == k->start_line && !strcmp(f->name, k->name) &&
	       !strcmp(f->file ? f->file : "", k->file ? k->file : "");
}

/* The function's index in the table, or UINT32_MAX (ENOMEM, or full). */
static uint32_t fn_intern(struct v8_names *vn, const struct v8_function *m)
{
	uint64_t h = hash_bytes(m->name, strlen(m->name)) ^
		     hash_u64((m->file ? hash_bytes(m->file, strlen(m->file)) : 0) +
			      (uint64_t)m->start_line);
	uint32_t id = idtab_find(&vn->fn_tab, h, fn_eq, vn, m);
	struct v8_fn f;

	if (id != UINT32_MAX || vn->fns.n >= V8_FN_MAX)
		return id;
	f = (struct v8_fn){strdup(m->name), m->file ? strdup(m->file) : NULL, m->start_line};
	if (!f.name || (m->file && !f.file) || VEC_PUSH(vn->fns, f))
		goto fail;
	if (idtab_insert(&vn->fn_tab, h, (uint32_t)vn->fns.n - 1)) {
		vn->fns.n--;
		goto fail;
	}
	return (uint32_t)vn->fns.n - 1;
fail:
	free(f.name);
	free(f.file);
	return UINT32_MAX;
}

/* Whether pc is where the step looks (bpf/runtime/v8.h): the embedded
 * builtins or anonymous memory (V8's code space). */
static bool in_v8_code(const struct v8_pid *e, struct proc *p, uint64_t pc)
{
	struct v8_bpf_proc b;
	const struct mapping *m;

	v8_proc_bpf(e->vp, &b);
	if (pc >= b.emb_lo && pc < b.emb_hi)
		return true;
	m = proc_mapping_at(p, pc);
	return m && !m->inode && !m->path[0];
}

/* The pc of the function f (its line kept where it fits), or 0 when the
 * table is full. */
static uint64_t fn_pc(struct v8_names *vn, const struct v8_function *f)
{
	uint32_t fn = fn_intern(vn, f);

	if (fn == UINT32_MAX)
		return 0;
	return V8_PC(fn, f->line > 0 && f->line < (1 << V8_LINE_BITS) ? f->line : 0);
}

/* An optimized frame's functions, innermost first, into out (at most max),
 * each with the line of its position: their number, 0 when its code is not
 * read (baseline code, none found: the caller names it as recorded, with
 * no line). Only a frame in V8's code space (not the embedded builtins),
 * not interpreted. */
static int inlined_pcs(struct v8_names *vn, const struct v8_pid *e, struct proc *p, uint64_t addr,
		       uint64_t info, uint64_t pc, bool leaf, uint64_t *out, int max)
{
	struct v8_inlined fr[V8_INLINE_MAX];
	struct v8_memo *mo = NULL;
	struct v8_bpf_proc b;
	const struct mapping *m;
	int k, n = 0;

	v8_proc_bpf(e->vp, &b);
	if (V8_FRAME_KIND(info) != V8_KIND_JS || (pc >= b.emb_lo && pc < b.emb_hi) ||
	    !(m = proc_mapping_at(p, pc)) || m->inode || m->path[0])
		return 0;
	if (e->memo) {
		mo = &e->memo[hash_u64(pc ^ hash_u64(addr)) & ((1u << V8_MEMO_BITS) - 1)];
		if (mo->pc == pc && mo->addr == addr && mo->info == info && mo->leaf == leaf &&
		    (int)mo->n <= max) {
			memcpy(out, mo->pcs, mo->n * sizeof(*out));
			vn->st.inlined += mo->n ? mo->n - 1 : 0;
			return (int)mo->n;
		}
	}
	k = v8_frame_inlined(e->vp, addr, pc, leaf, fr, V8_INLINE_MAX);
	if (mo && k == -ENOENT)
		*mo = (struct v8_memo){.pc = pc, .addr = addr, .info = info, .leaf = leaf};
	if (k < 1 || k > max)
		return 0;
	for (int j = 0; j < k; j++) {
		struct v8_function f;

		/* Each function interned before the next is read (f is the
		 * process's cache's). */
		if (v8_inlined_function(e->vp, &fr[j], &f) || !(out[n] = fn_pc(vn, &f)))
			return 0;
		n++;
	}
	vn->st.inlined += (uint64_t)n - 1;
	if (mo && n <= V8_MEMO_FNS) {
		*mo = (struct v8_memo){
		    .pc = pc, .addr = addr, .info = info, .leaf = leaf, .n = (uint32_t)n};
		memcpy(mo->pcs, out, (size_t)n * sizeof(*out));
	}
	return n;
}

/* The tests' cross-check: a frame at pc in V8's code space (where the
 * perf map names it) named fpc (its own function's). */
static void xcheck(struct v8_names *vn, const struct v8_pid *e, struct proc *p, uint64_t pc,
		   uint64_t fpc)
{
	uint64_t fn = (fpc & ~V8_PC_TAG_MASK) >> V8_LINE_BITS;
	struct v8_bpf_proc b;
	const struct mapping *m;

	if (!vn->xcheck || fn >= vn->fns.n)
		return;
	v8_proc_bpf(e->vp, &b);
	if ((pc >= b.emb_lo && pc < b.emb_hi) || !(m = proc_mapping_at(p, pc)) || m->inode ||
	    m->path[0])
		return;
	fprintf(vn->xcheck, "%d %" PRIx64 " %s\n", (int)p->pid, pc, vn->fns.v[fn].name);
}

/* Each recorded frame's user ip (the frame's index in the record) is
 * replaced by its function, or by the functions it stands for where
 * Turbofan inlined them (innermost first); a frame that names nothing now
 * keeps its ip. The record's ips are the CFI walk's; a sample whose stack
 * was copied for DWARF (a table not loaded yet: a node's first moments, or
 * all along on a kernel where its tables are not built) has its ips from
 * the unwind of the copy past dwarf_at, which may be other frames: an
 * index there is named only when its pc is V8's code, as the JVM's rewrite
 * does. */
static void source_rewrite(void *ctx, struct proc *p, const struct ev_sample *s, uint64_t *pcs,
			   int *n, int max, bool *cut)
{
	struct v8_names *vn = ctx;
	const __u64 *w =
	    &s->ips[(size_t)s->nkernel + s->nuser + 2 * (size_t)s->npython + 2 * (size_t)s->njvm];
	unsigned nv = s->nv8 < V8_BPF_FRAMES ? s->nv8 : V8_BPF_FRAMES, next = 0;
	uint64_t out[MAX_USER_STACK];
	int walked = *n, m = 0, i;
	struct v8_pid *e;
	uint64_t last_addr = 0, last_info = 0, last_pc = 0;

	if (!nv)
		return;
	vn->st.samples++;
	vn->st.truncated += !!(s->flags & SAMPLE_V8_TRUNC);
	if (!(e = VEC_PID_FIND(vn->pids, p->pid)))
		return;
	if (s->flags & SAMPLE_DWARF)
		walked = (s->flags & SAMPLE_DWARF_AT) ? s->dwarf_at : 0;
	if (max > MAX_USER_STACK)
		max = MAX_USER_STACK;
	for (i = 0; i < *n && m < max; i++) {
		uint64_t addr, info;
		struct v8_function f;
		int k;

		/* The records are in the walk's order, innermost first. */
		while (next < nv && V8_FRAME_INDEX(w[2 * next]) < (unsigned)i)
			next++;
		if (next >= nv || V8_FRAME_INDEX(w[2 * next]) != (unsigned)i) {
			out[m++] = pcs[i];
			continue;
		}
		addr = V8_FRAME_ADDR(w[2 * next]);
		info = w[2 * next + 1];
		next++;
		if (i >= walked && !in_v8_code(e, p, pcs[i])) {
			vn->st.unnamed++;
			last_pc = 0;
			out[m++] = pcs[i];
			continue;
		}
		/* A recursion's frames: the same function at the same place,
		 * read once. */
		if (addr == last_addr && info == last_info && last_pc) {
			out[m++] = last_pc;
			vn->st.frames++;
			continue;
		}
		if ((k = inlined_pcs(vn, e, p, addr, info, pcs[i], i == 0, &out[m], max - m))) {
			vn->st.frames++;
			m += k;
			last_pc = 0;
			xcheck(vn, e, p, pcs[i], out[m - 1]);
			continue;
		}
		if (v8_frame_function(e->vp, addr, info, &f) || !(out[m] = fn_pc(vn, &f))) {
			vn->st.unnamed++;
			last_pc = 0;
			out[m++] = pcs[i];
			continue;
		}
		vn->st.frames++;
		xcheck(vn, e, p, pcs[i], out[m]);
		last_pc = out[m++];
		last_addr = addr;
		last_info = info;
	}
	if (i < *n) /* max, with the inlined frames: the frames after are cut */
		*cut = true;
	memcpy(pcs, out, (size_t)m * sizeof(*pcs));
	*n = m;
}

static bool source_find(void *ctx, struct proc *p, uint64_t pc, uint64_t t, struct name_hit *hit)
{
	const struct v8_names *vn = ctx;
	uint64_t fn = (pc & ~V8_PC_TAG_MASK) >> V8_LINE_BITS;
	const struct v8_fn *f;

	(void)p;
	(void)t;
	if ((pc & V8_PC_TAG_MASK) != (V8_PC_TAG & V8_PC_TAG_MASK) || pc == TRUNCATED_PC ||
	    fn >= vn->fns.n)
		return false;
	f = &vn->fns.v[fn];
	*hit = (struct name_hit){.name = f->name,
				 .file = f->file,
				 .line = (int)(pc & ((1u << V8_LINE_BITS) - 1)),
				 .start_line = f->start_line};
	return true;
}

void v8_names_source(struct v8_names *vn, struct name_source *out)
{
	*out = (struct name_source){.ctx = vn,
				    .maps_read = source_maps_read,
				    .find = source_find,
				    .rewrite = source_rewrite,
				    .leaf = source_leaf};
}
