/* XRay FDR traces per recorded process: function ids (one registry for
 * every process, so a traced function keeps its uprobe cookie as id), the
 * exact trace of -t (fed as events are drained, bounded by the flight
 * recorder), sampled timelines (built from the samples when writing), CPU
 * migrations, and the instrumentation map that names the ids. */
#ifndef USER_XRAY_H
#define USER_XRAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "bpf/events.h"

struct proc;
struct procs;

/* The XRay side of a recording (one per recorder, user/record.c): the
 * function-id registry and the files' settings. NULL + -ENOMEM on failure. */
struct xray;
int xray_new(struct xray **out);
void xray_free(struct xray *x);

struct xray_cfg {
	int version;		    /* 1 or 5 */
	uint64_t buffer_size;	    /* --fdr-buffer-size; 0: the writer's default */
	uint64_t flight_recorder;   /* --flight-recorder bytes per thread; 0: all */
	uint64_t start_realtime_ns; /* to stamp WallClockTime */
	uint64_t period_ns;	    /* sampling period: a timeline's last frames end one later */
};
void xray_configure(struct xray *x, const struct xray_cfg *c);

/* The id of a function name (from 1); 0 when ids ran out. */
uint32_t xray_func_id(struct xray *x, const char *name);
/* The same for a function at file offset start_off of sf (a -t probe),
 * whose source file and first line the map then gives (else object, the
 * file it is in). */
struct symfile;
uint32_t xray_func_id_at(struct xray *x, const char *name, struct symfile *sf, uint64_t start_off,
			 const char *object);

/* Drained events of recorded processes. 0 or -ENOMEM. */
/* A -t entry or exit (kind: CALL_ENTRY or CALL_EXIT) of function func_id;
 * an exit with func_id 0 is the thread's innermost open call (kernels
 * without BPF cookies). 0 or -errno. */
int xray_on_call(struct xray *x, struct proc *p, const struct ev_call *c, uint32_t func_id,
		 unsigned kind);
int xray_on_migrate(struct proc *p, const struct ev_hdr *h);

/* The files of a process: its sampled timeline (xray-PID.fdr, when
 * sampled), its -t trace (xray-trace-PID.fdr) and the map that names their
 * ids (xray-PID.map, from ri->xray's registry), each name with suffix before
 * the extension. 0, or the
 * first write's -errno after reporting. */
struct run_info;
int xray_write_files(const struct run_info *ri, struct proc *p, const char *suffix, bool sampled);
/* At the stop (ts): every -t call still open is closed, so that each entry
 * has its exit. */
void xray_close_calls(struct procs *procs, uint64_t ts);
void xray_proc_free(struct proc *p);

#endif
