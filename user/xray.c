#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/util.h"
#include "user/xray.h"

/* Function names and ids, shared by every process's trace and map: a traced
 * function keeps one id (its uprobe cookie) in every process. */
static VEC(char *) fnames;
static struct idtab fname_tab;

static bool fname_eq(const void *ctx, uint32_t id, const void *key)
{
	(void)ctx;
	return !strcmp(fnames.v[id], key);
}

uint32_t xray_func_id(const char *name)
{
	uint64_t h = hash_bytes(name, strlen(name));
	uint32_t id = idtab_find(&fname_tab, h, fname_eq, NULL, name);

	if (id != UINT32_MAX)
		return id + 1;
	/* XRay function ids are 28 bits. */
	if (fnames.n >= (1u << 28) - 2 || VEC_PUSH(fnames, xstrdup(name)))
		return 0;
	if (idtab_insert(&fname_tab, h, fnames.n - 1))
		return 0;
	return fnames.n;
}

const char *xray_func_name(uint32_t id)
{
	return id && id <= fnames.n ? fnames.v[id - 1] : NULL;
}

uint32_t xray_nfuncs(void)
{
	return fnames.n;
}

void xray_free(void)
{
	size_t i;

	for (i = 0; i < fnames.n; i++)
		free(fnames.v[i]);
	VEC_FREE(fnames);
	idtab_free(&fname_tab);
}
