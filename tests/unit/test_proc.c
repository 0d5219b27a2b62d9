/* user/proc.c: a process that exited before its maps were read, its frames
 * named from the mappings BPF sends at its exit (EV_VMA), which give a
 * file's inode, device and bare name only. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "user/proc.h"

struct text_map {
	uint64_t start, end, offset, ino;
	unsigned dev_major, dev_minor;
	char path[PATH_MAX];
};

/* This program's mapping of the executable text holding addr. */
static bool self_map(uint64_t addr, struct text_map *tm)
{
	char line[PATH_MAX + 128], perms[5];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		int n = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &tm->start, &tm->end, perms, &tm->offset, &tm->dev_major, &tm->dev_minor,
			   &tm->ino, &n) < 7 ||
		    addr < tm->start || addr >= tm->end || perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(tm->path, sizeof(tm->path), "%s", line + n);
		found = true;
	}
	fclose(f);
	return found;
}

/* A pid whose process has exited and been reaped: /proc knows it no more. */
static pid_t gone_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return pid;
}

/* The process of pid with one sample whose only frame is the leaf pc, then
 * its exit-time mapping of tm named name (ino changed by dino). */
static struct proc *exited_with(struct procs *procs, pid_t pid, uint64_t pc,
				const struct text_map *tm, const char *name, uint64_t dino)
{
	union {
		struct ev_sample s;
		char buf[sizeof(struct ev_sample) + sizeof(uint64_t)];
	} u = {0};
	struct ev_vma v = {.hdr = {.type = EV_VMA, .pid = pid, .tid = pid},
			   .start = tm->start,
			   .end = tm->end,
			   .offset = tm->offset,
			   .ino = tm->ino + dino,
			   .dev_major = tm->dev_major,
			   .dev_minor = tm->dev_minor};

	u.s.hdr = (struct ev_hdr){.type = EV_SAMPLE, .pid = pid, .tid = pid};
	memcpy(u.s.comm, "gone", 5);
	u.s.nuser = 1;
	u.s.ips[0] = pc;
	if (proc_add_sample(procs, &u.s))
		return NULL;
	snprintf(v.name, sizeof(v.name), "%s", name);
	proc_on_vma(procs, pid, &v);
	return proc_find(procs, pid);
}

static const struct frame *user_frame(const struct proc *p)
{
	for (size_t i = 0; i < p->frames.n; i++)
		if (p->frames.v[i].kind == FRAME_USER)
			return &p->frames.v[i];
	return NULL;
}

/* libc's bare name is found where the loader looks, as the very file mapped:
 * its path and its function's name. Before, it stayed "libc.so.6", unnamed. */
static void test_vma_lib_found(void)
{
	uint64_t pc = (uint64_t)(uintptr_t)&getppid;
	struct procs procs = {0};
	struct text_map tm;
	const struct frame *f;
	struct proc *p;
	char real[PATH_MAX];
	const char *base;

	CHECK(self_map(pc, &tm) && realpath(tm.path, real));
	base = strrchr(tm.path, '/') ? strrchr(tm.path, '/') + 1 : tm.path;
	p = exited_with(&procs, gone_pid(), pc, &tm, base, 0);
	CHECK(p && (f = user_frame(p)) && f->map);
	if (p && (f = user_frame(p)) && f->map) {
		CHECKF(!strcmp(f->map->path, real), "path %s (want %s)", f->map->path, real);
		CHECKF(f->name && !strcmp(f->name, "getppid"), "name %s",
		       f->name ? f->name : "(none)");
	}
	procs_free(&procs);
}

/* A file of that name that is not the one mapped (another inode), or a name
 * with a directory in it: the bare name stays, and no name is guessed. */
static void test_vma_lib_refused(void)
{
	uint64_t pc = (uint64_t)(uintptr_t)&getppid;
	struct procs procs = {0};
	struct text_map tm;
	const struct frame *f;
	struct proc *p;
	const char *base;

	CHECK(self_map(pc, &tm));
	base = strrchr(tm.path, '/') ? strrchr(tm.path, '/') + 1 : tm.path;
	p = exited_with(&procs, gone_pid(), pc, &tm, base, 1);
	CHECK(p && (f = user_frame(p)) && f->map);
	if (p && (f = user_frame(p)) && f->map) {
		CHECKF(!strcmp(f->map->path, base), "path %s (want %s)", f->map->path, base);
		CHECK(!f->name);
	}
	p = exited_with(&procs, gone_pid(), pc, &tm, "../x86_64-linux-gnu/libc.so.6", 0);
	CHECK(p && (f = user_frame(p)) && f->map);
	if (p && (f = user_frame(p)) && f->map)
		CHECKF(f->map->path[0] != '/', "path %s", f->map->path);
	procs_free(&procs);
}

int main(void)
{
	RUN_TEST(test_vma_lib_found);
	RUN_TEST(test_vma_lib_refused);
	return check_tests_failed != 0;
}
