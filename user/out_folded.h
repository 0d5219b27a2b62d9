/* stacks.folded and flamegraph.html: every process's samples merged into
 * one tree of frames (formats/folded.h), named as profile.pb.gz names them,
 * each process under its comm. Under -a, processes are added as output.c
 * folds them into the profile (as they exit, and the live ones every
 * minute), and forgotten: the tree grows with distinct stacks only. */
#ifndef USER_OUT_FOLDED_H
#define USER_OUT_FOLDED_H

#include <stdio.h>

struct proc;

/* Adds the process's samples (those it holds now). A failure (ENOMEM) is
 * kept, and the two files are then not written. */
void out_folded_add(struct proc *p);
/* emit_file fillers (ctx: the run_info): the processes still held are
 * added first, once. */
int out_folded_fill(void *ctx, FILE *f, int fd);
int out_flamegraph_fill(void *ctx, FILE *f, int fd);
void out_folded_free(void);

#endif
