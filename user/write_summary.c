/* summary.json: the run (event, rate, counts, the CFI walk's figures,
 * what this kernel lacks), a row per process, and the files written. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/util.h"
#include "user/features.h"
#include "user/jit.h"
#include "user/offcpu.h"
#include "user/usdt.h"
#include "user/outdir.h"
#include "user/proc.h"
#include "user/sink.h"
#include "user/trace.h"
#include "user/util.h"
#include "user/writers.h"

/* A JSON string. Names are sanitized where they enter the model; the rest
 * (command line, output directory) is the user's, sanitized here as JSON
 * must be valid UTF-8. */
static void json_str(FILE *f, const char *raw)
{
	char *clean = fmt_sanitize_dup(raw, strlen(raw));
	const char *s = clean ? clean : "";

	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
	free(clean);
}

/* A process's row of summary.json, on one line. */
void summary_row(FILE *f, const struct proc *p, const struct offcpu *oc)
{
	const struct jit_guide *g;

	fprintf(f, "{\"pid\": %d, \"comm\": ", p->pid);
	json_str(f, p->comm);
	fprintf(f,
		", \"samples\": %" PRIu64 ", \"lost_samples\": %" PRIu64 ", \"threads\": %zu"
		", \"unwinding\": \"%s\", \"cfi_walked\": %" PRIu64
		", \"cfi_reached_root\": %" PRIu64 ", \"cfi_to_dwarf\": %" PRIu64
		", \"dwarf_unwound\": %" PRIu64 ", \"dwarf_truncated\": %" PRIu64
		", \"dwarf_unwind_ns\": %" PRIu64 ", \"max_stack_truncated\": %" PRIu64,
		p->nsamples, p->lost, p->threads.n,
		p->cfi_walked > p->unwound ? "cfi"
		: p->unwound		   ? "dwarf"
					   : "fp",
		p->cfi_walked, p->cfi_root, p->cfi_to_dwarf, p->unwound, p->truncated, p->unwind_ns,
		p->max_stack_cut);
	if ((g = jit_guide(p))) {
		fprintf(f, ", \"jit_unnamed\": {\"share\": %.3f, \"runtime\": ", g->share);
		json_str(f, g->runtime);
		fprintf(f, ", \"fix\": ");
		json_str(f, g->fix);
		fputc('}', f);
	}
	if (oc)
		fprintf(f, ", \"offcpu_ns\": %" PRIu64, offcpu_proc_ns(oc, p));
	fputc('}', f);
}

struct summary_ctx {
	const struct run_info *ri;
	FILE *rows;
	long rows_end;
	const char *cmd; /* its own */
};

/* -t: each function probed with its calls (entries), most called first,
 * and their sum. traced_events (above) counts entries and returns. */
static void trace_json(FILE *f, const struct trace_links *l)
{
	const struct trace_func **v;
	size_t n = trace_funcs(l, &v), i;
	uint64_t sum = 0;

	for (i = 0; i < n; i++)
		sum += trace_calls_of(l, v[i]->id);
	fprintf(f, ",\n  \"traced_calls\": %" PRIu64 ",\n  \"traced_functions\": [", sum);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, v[i]->name);
		fprintf(f, ", \"object\": ");
		json_str(f, v[i]->obj);
		fprintf(f, ", \"calls\": %" PRIu64 "}", trace_calls_of(l, v[i]->id));
	}
	fprintf(f, "%s]", n ? "\n  " : "");
	free(v);
}

static int fill_summary(void *ctx, FILE *f, int fd)
{
	const struct summary_ctx *sc = ctx;
	const struct run_info *ri = sc->ri;
	const struct written *written;
	size_t i, nwritten;
	int k;

	(void)fd;
	fprintf(f, "{\n  \"command_line\": [");
	for (k = 0; k < ri->argc; k++) {
		fputs(k ? ", " : "", f);
		json_str(f, ri->argv[k]);
	}
	fprintf(f, "],\n  \"event\": ");
	json_str(f, ri->event);
	fprintf(f,
		",\n  \"frequency_hz\": %d,\n  \"ringbuf_mib\": %u,\n  \"duration_s\": %.3f,\n  "
		"\"start_time_ns\": %" PRIu64 ",\n  \"samples\": %" PRIu64
		",\n  \"sample_bytes\": %" PRIu64 ",\n  \"sample_bytes_median\": %" PRIu64
		",\n  \"drain_cpu_ns\": %" PRIu64 ",\n  \"drain_after_1s\": {\"cpu_ns\": %" PRIu64
		", \"samples\": %" PRIu64 "},\n  \"sampler_run_time_ns\": %" PRIu64
		",\n  \"sampler_run_cnt\": %" PRIu64 ",\n  \"lost_samples\": %" PRIu64
		",\n  \"lost_task_events\": %" PRIu64 ",\n  \"exit_maps_busy\": %" PRIu64
		",\n  \"kernel_stack_errors\": %" PRIu64 ",\n  \"user_stack_errors\": %" PRIu64
		",\n  \"user_stacks_walked_by_kernel\": %" PRIu64 ",\n  \"traced_events\": %" PRIu64
		",\n  \"lost_traced_events\": %" PRIu64 ",\n  \"kernel\": ",
		ri->freq, ri->ringbuf_mb, ri->duration_ns / 1e9, ri->start_realtime_ns, ri->samples,
		ri->sample_bytes, ri->sample_bytes_median, ri->drain_cpu_ns, ri->steady_cpu_ns,
		ri->steady_samples, ri->bpf_run_ns, ri->bpf_run_cnt, ri->lost, ri->lost_tasks,
		ri->exit_maps_busy, ri->kstack_err, ri->ustack_err, ri->kernel_walks,
		ri->traced_events, ri->lost_traced_events);
	json_str(f, ri->kernel ? ri->kernel : "");
	if (ri->window)
		fprintf(f,
			",\n  \"window\": {\"index\": %" PRIu64
			", \"period_s\": %.3f, \"last\": %s}",
			ri->window->index, ri->window->period_ns / 1e9,
			ri->window->last ? "true" : "false");
	if (ri->window && ri->procs) {
		struct procs_held h;

		procs_held(ri->procs, &h);
		fprintf(f,
			",\n  \"held\": {\"procs\": %" PRIu64 ", \"exited\": %" PRIu64
			", \"frames\": %" PRIu64 ", \"mappings\": %" PRIu64
			", \"threads\": %" PRIu64 ", \"files\": %" PRIu64 ", \"gone\": %" PRIu64
			", \"exits_missed\": %" PRIu64 "}",
			h.procs, h.exited, h.frames, h.mappings, h.threads, h.files, h.gone,
			h.exits_missed);
	}
	if (ri->sinks)
		sinks_json(ri->sinks, f);
	if (ri->trace)
		trace_json(f, ri->trace);
	/* Stacks cut at --max-stack, each ended by a [truncated] frame. */
	fprintf(f, ",\n  \"max_stack\": %u, \"max_stack_truncated\": %" PRIu64,
		ri->procs ? ri->procs->max_stack : 0, ri->procs ? ri->procs->max_stack_cut : 0);
	if (ri->cfi)
		fprintf(f,
			",\n  \"cfi_walk\": {\"walks\": %" PRIu64 ", \"reached_root\": %" PRIu64
			", \"truncated\": %" PRIu64 ", \"to_dwarf\": %" PRIu64
			", \"fp_steps_no_mapping\": %" PRIu64 ", \"fp_steps_no_cfi\": %" PRIu64
			", \"read_errors\": %" PRIu64 ", \"uretprobe_misses\": %" PRIu64
			", \"tables_built\": %" PRIu64 ", \"table_bytes_peak\": %" PRIu64
			", \"budget_bytes\": %" PRIu64 ", \"out_of_budget\": %" PRIu64
			", \"worker_cpu_ns\": %" PRIu64 "}",
			ri->cfi_walks, ri->cfi_root, ri->cfi_trunc, ri->cfi_to_dwarf,
			ri->cfi_fp_nomap, ri->cfi_fp_nocfi, ri->cfi_read_err,
			ri->cfi_uretprobe_miss, ri->cfi_tables, ri->cfi_table_bytes,
			ri->cfi_budget_bytes, ri->cfi_out_of_budget, ri->cfi_worker_cpu_ns);
	if (ri->py_walked || ri->py_no_tstate || ri->py_fault)
		fprintf(f,
			",\n  \"python\": {\"walks\": %" PRIu64 ", \"no_thread_state\": %" PRIu64
			", \"faulted\": %" PRIu64 ", \"truncated\": %" PRIu64
			", \"samples_with_frames\": %" PRIu64 ", \"merged\": %" PRIu64
			", \"frames\": %" PRIu64 ", \"frames_left_native\": %" PRIu64
			", \"runs_at_root\": %" PRIu64 ", \"at_eval_edge\": %" PRIu64
			", \"walked_again\": %" PRIu64 "}",
			ri->py_walked, ri->py_no_tstate, ri->py_fault, ri->py_truncated,
			ri->py_samples, ri->py_merged, ri->py_frames, ri->py_unnamed,
			ri->py_leftover, ri->py_edge, ri->py_restarted);
	if (ri->jvm_frames_walked || ri->jvm_no_blob || ri->jvm_bad_frame || ri->jvm_samples)
		fprintf(f,
			",\n  \"jvm\": {\"frames_walked\": %" PRIu64
			", \"pcs_in_no_blob\": %" PRIu64 ", \"bad_frames\": %" PRIu64
			", \"read_faults\": %" PRIu64 ", \"truncated\": %" PRIu64
			", \"samples_with_frames\": %" PRIu64 ", \"frames_named\": %" PRIu64
			", \"inlined_named\": %" PRIu64 ", \"inlined_unreadable\": %" PRIu64
			", \"frames_left_native\": %" PRIu64
			", \"left_native_unloaded_before_read\": %" PRIu64 "}",
			ri->jvm_frames_walked, ri->jvm_no_blob, ri->jvm_bad_frame,
			ri->jvm_read_fault, ri->jvm_truncated, ri->jvm_samples, ri->jvm_named,
			ri->jvm_inlined, ri->jvm_inline_cut, ri->jvm_unnamed, ri->jvm_gone);
	if (ri->v8_frames_recorded || ri->v8_not_js || ri->v8_samples)
		fprintf(f,
			",\n  \"v8\": {\"frames_recorded\": %" PRIu64
			", \"frames_not_js\": %" PRIu64 ", \"read_faults\": %" PRIu64
			", \"truncated\": %" PRIu64 ", \"samples_with_frames\": %" PRIu64
			", \"frames_named\": %" PRIu64 ", \"inlined_named\": %" PRIu64
			", \"frames_left_native\": %" PRIu64 "}",
			ri->v8_frames_recorded, ri->v8_not_js, ri->v8_read_fault, ri->v8_truncated,
			ri->v8_samples, ri->v8_named, ri->v8_inlined, ri->v8_unnamed);
	if (ri->offcpu) {
		struct offcpu_totals t;

		offcpu_totals(ri->offcpu, &t);
		fprintf(f,
			",\n  \"offcpu\": {\"switches\": %" PRIu64 ", \"waits\": %" PRIu64
			", \"min_ns\": %" PRIu64 ", \"short_waits\": %" PRIu64
			", \"short_waits_ns\": %" PRIu64 ", \"stacks\": %" PRIu64
			", \"lost_stacks\": %" PRIu64 ", \"lost_waits\": %" PRIu64
			", \"lost_waits_ns\": %" PRIu64 ", \"thread_only_waits\": %" PRIu64
			", \"thread_only_waits_ns\": %" PRIu64 ", \"lost_timeline_waits\": %" PRIu64
			", \"lost_starts\": %" PRIu64 ", \"sleepers_at_start\": %" PRIu64
			", \"open_waits\": %" PRIu64 ", \"stale_waits\": %" PRIu64
			", \"unseen_ends\": %" PRIu64 ", \"unseen_ends_ns\": %" PRIu64
			", \"sums_entries\": %" PRIu32 ", \"threads_entries\": %" PRIu32
			", \"cfi_walked\": %" PRIu64 ", \"cfi_to_dwarf\": %" PRIu64 "}",
			t.switches, t.waits, t.min_ns, t.short_waits, t.short_ns, t.stacks,
			t.lost_stacks, t.lost, t.lost_ns, t.thread_only, t.thread_only_ns,
			t.lost_events, t.lost_starts, t.sleepers, t.open, t.stale, t.unseen,
			t.unseen_ns, t.sums_entries, t.threads_entries, t.cfi_walked,
			t.cfi_to_dwarf);
	}
	if (ri->usdt) {
		struct usdt_probe_stat ps;

		/* Each probe's firings: an instant's, and a pair's starts and
		 * ends (a start without its end, or the reverse, shows here). */
		fprintf(f,
			",\n  \"usdt\": {\"lost\": %" PRIu64 ", \"string_faults\": %" PRIu64
			", \"strings_dropped\": %" PRIu64 ", \"lone_ends\": %" PRIu64
			", \"continued\": %" PRIu64 ", \"probes\": [",
			ri->usdt_lost, ri->usdt_str_fault, usdt_strs_dropped(ri->usdt),
			usdt_lone_ends(ri->usdt), usdt_cuts(ri->usdt));
		for (i = 0; !usdt_probe_stat(ri->usdt, i, &ps); i++) {
			fprintf(f, "%s\n    {\"provider\": ", i ? "," : "");
			json_str(f, ps.provider);
			fprintf(f, ", \"name\": ");
			json_str(f, ps.name);
			fprintf(f, ", \"binary\": ");
			json_str(f, ps.path);
			fprintf(f, ", \"fired\": %" PRIu64 "}", ps.fired);
		}
		fprintf(f, "]}");
	}
	fprintf(f, ",\n  \"degraded\": [");
	for (i = 0; ri->degraded && i < ri->degraded->n; i++) {
		fprintf(f, "%s\n    {\"feature\": ", i ? "," : "");
		json_str(f, ri->degraded->what[i]);
		fprintf(f, ", \"why\": ");
		json_str(f, ri->degraded->why[i]);
		fputc('}', f);
	}
	fprintf(f, "%s],\n  \"processes\": [", i ? "\n  " : "");
	k = 0;
	if (sc->rows && !fseek(sc->rows, 0, SEEK_SET)) {
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;
		long at = 0;

		/* Complete rows only: a failed write may have left part of one. */
		while (at < sc->rows_end && (n = getline(&line, &cap, sc->rows)) > 0) {
			fprintf(f, "%s\n    %.*s", k++ ? "," : "", (int)(n - 1), line);
			at += n;
		}
		free(line);
		if (ferror(sc->rows))
			warn("summary.json: the rows of exited processes set aside in %s could "
			     "not be read back: some are missing",
			     ri->out->path);
	}
	for (i = 0; i < ri->procs->v.n; i++) {
		const struct proc *p = ri->procs->v.v[i];

		/* -p and --: every process followed, even one that recorded
		 * nothing (a server's idle master); -a: those recorded. */
		if (!p->nsamples && !p->lost && !p->exact && ri->system_wide &&
		    !offcpu_proc_ns(ri->offcpu, p))
			continue;
		fprintf(f, "%s\n    ", k++ ? "," : "");
		summary_row(f, p, ri->offcpu);
	}
	fprintf(f, "\n  ],\n  \"files\": [");
	written = outdir_written(&nwritten);
	for (i = 0; i < nwritten; i++) {
		fprintf(f, "%s\n    {\"file\": ", i ? "," : "");
		json_str(f, written[i].name);
		if (written[i].pid)
			fprintf(f, ", \"pid\": %d", written[i].pid);
		fprintf(f, ", \"open\": ");
		json_str(f, written[i].open_cmd);
		if (written[i].nalso) {
			size_t j;

			fprintf(f, ", \"open_also\": [");
			for (j = 0; j < written[i].nalso; j++) {
				fputs(j ? ", " : "", f);
				json_str(f, written[i].also[j]);
			}
			fputc(']', f);
		}
		fputc('}', f);
	}
	/* Itself last, as it is listed at the end: every command printed is
	 * here. */
	fprintf(f, "%s\n    {\"file\": \"summary.json\", \"open\": ", nwritten ? "," : "");
	json_str(f, sc->cmd);
	fprintf(f, "}\n  ]\n}\n");
	return 0;
}

int write_summary(const struct run_info *ri, FILE *rows, long rows_end)
{
	struct summary_ctx sc = {ri, rows, rows_end, NULL};
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "cat %s/summary.json", ri->outdir);
	sc.cmd = cmd;
	return outdir_emit(ri->out, "summary.json", 0, cmd, fill_summary, &sc);
}
