/* JavaScript frames in the recorded stacks (user/runtime/v8_names.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
};

struct v8_pid {
	pid_t pid;
	struct v8_proc *vp;
};

struct v8_names {
	struct v8 *v;
	int procs_fd;
	VEC(struct v8_fn) fns;
	struct idtab fn_tab;
	VEC(struct v8_pid) pids;
	VEC(pid_t) refused; /* looked at: no V8, or one not walked */
	struct v8_names_stats st;
};

int v8_names_new(struct v8_names **out, struct v8 *v, int procs_fd)
{
	struct v8_names *vn = calloc(1, sizeof(*vn));

	if (!vn)
		return -ENOMEM;
	vn->v = v;
	vn->procs_fd = procs_fd;
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
	VEC_FREE(vn->pids);
	VEC_FREE(vn->refused);
	free(vn);
}

void v8_names_get_stats(const struct v8_names *vn, struct v8_names_stats *out)
{
	*out = vn ? vn->st : (struct v8_names_stats){0};
}

static struct v8_pid *pid_find(const struct v8_names *vn, pid_t pid)
{
	for (size_t i = 0; i < vn->pids.n; i++)
		if (vn->pids.v[i].pid == pid)
			return &vn->pids.v[i];
	return NULL;
}

int v8_names_walked(const struct v8_names *vn, pid_t pid)
{
	return vn && pid_find(vn, pid);
}

void v8_names_forget(struct v8_names *vn, pid_t pid)
{
	struct v8_pid *e;
	__u32 key = (__u32)pid;

	if (!vn)
		return;
	for (size_t i = 0; i < vn->refused.n; i++)
		if (vn->refused.v[i] == pid)
			vn->refused.v[i--] = vn->refused.v[--vn->refused.n];
	if (!(e = pid_find(vn, pid)))
		return;
	if (vn->procs_fd >= 0)
		bpf_map_delete_elem(vn->procs_fd, &key);
	v8_forget(vn->v, pid);
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

	if (!p->maps_text || pid_find(vn, p->pid))
		return;
	for (size_t i = 0; i < vn->refused.n; i++)
		if (vn->refused.v[i] == p->pid)
			return;
	err = v8_attach_maps(vn->v, p->pid, p->maps_text, strlen(p->maps_text), &vp);
	if (!err && writes_perf_map(p->pid)) {
		debug("process %d runs V8 and writes a perf map: its JavaScript frames are named "
		      "from it",
		      (int)p->pid);
		v8_forget(vn->v, p->pid);
		err = -EEXIST;
	}
	if (err) {
		VEC_PUSH(vn->refused, p->pid); /* ENOMEM: looked at again */
		return;
	}
	e.vp = vp;
	v8_proc_bpf(vp, &val);
	if (vn->procs_fd >= 0 && bpf_map_update_elem(vn->procs_fd, &key, &val, BPF_ANY)) {
		warn("process %d runs V8, but it could not be added to the BPF walk: %s; its "
		     "JavaScript frames are not named",
		     (int)p->pid, strerror(errno));
		v8_forget(vn->v, p->pid);
		return;
	}
	if (VEC_PUSH(vn->pids, e)) {
		bpf_map_delete_elem(vn->procs_fd, &key);
		v8_forget(vn->v, p->pid);
	}
}

static bool fn_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct v8_fn *f = &((const struct v8_names *)ctx)->fns.v[id];
	const struct v8_function *k = key;

	return !strcmp(f->name, k->name) && !strcmp(f->file ? f->file : "", k->file ? k->file : "");
}

/* The function's index in the table, or UINT32_MAX (ENOMEM, or full). */
static uint32_t fn_intern(struct v8_names *vn, const struct v8_function *m)
{
	uint64_t h = hash_bytes(m->name, strlen(m->name)) ^
		     hash_u64(m->file ? hash_bytes(m->file, strlen(m->file)) : 0);
	uint32_t id = idtab_find(&vn->fn_tab, h, fn_eq, vn, m);
	struct v8_fn f;

	if (id != UINT32_MAX || vn->fns.n >= V8_FN_MAX)
		return id;
	f = (struct v8_fn){strdup(m->name), m->file ? strdup(m->file) : NULL};
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

/* Each recorded frame's user ip (the frame's index in the record) is
 * replaced by its function; a frame that names nothing now keeps its ip.
 * Only the CFI walk's ips are the frames the step saw: those a DWARF
 * unwind of the stack copy gave are left alone. */
static void source_rewrite(void *ctx, struct proc *p, const struct ev_sample *s, uint64_t *pcs,
			   int *n, int max, bool *cut)
{
	struct v8_names *vn = ctx;
	const __u64 *w =
	    &s->ips[(size_t)s->nkernel + s->nuser + 2 * (size_t)s->npython + 2 * (size_t)s->njvm];
	unsigned nv = s->nv8 < V8_BPF_FRAMES ? s->nv8 : V8_BPF_FRAMES;
	int walked = *n;
	struct v8_pid *e;
	uint64_t last_addr = 0, last_info = 0, last_pc = 0;

	(void)max; /* pcs replaced in place: none added, none cut */
	(void)cut;
	if (!nv)
		return;
	vn->st.samples++;
	vn->st.truncated += !!(s->flags & SAMPLE_V8_TRUNC);
	if (!(e = pid_find(vn, p->pid)))
		return;
	if (s->flags & SAMPLE_DWARF)
		walked = (s->flags & SAMPLE_DWARF_AT) ? s->dwarf_at : 0;
	for (unsigned k = 0; k < nv; k++) {
		unsigned i = V8_FRAME_INDEX(w[2 * k]);
		uint64_t addr = V8_FRAME_ADDR(w[2 * k]), info = w[2 * k + 1];
		struct v8_function f;
		uint32_t fn;

		if (i >= (unsigned)walked)
			break;
		/* A recursion's frames: the same function, read once. */
		if (addr == last_addr && V8_FRAME_COOKIE(info) == V8_FRAME_COOKIE(last_info) &&
		    last_pc) {
			pcs[i] = last_pc;
			vn->st.frames++;
			continue;
		}
		if (v8_frame_function(e->vp, addr, info, &f) ||
		    (fn = fn_intern(vn, &f)) == UINT32_MAX) {
			vn->st.unnamed++;
			last_pc = 0;
			continue;
		}
		vn->st.frames++;
		pcs[i] = last_pc = V8_PC(fn, 0);
		last_addr = addr;
		last_info = info;
	}
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
	*hit = (struct name_hit){
	    .name = f->name, .file = f->file, .line = (int)(pc & ((1u << V8_LINE_BITS) - 1))};
	return true;
}

void v8_names_source(struct v8_names *vn, struct name_source *out)
{
	*out = (struct name_source){.ctx = vn,
				    .maps_read = source_maps_read,
				    .find = source_find,
				    .rewrite = source_rewrite};
}
