/* /proc/PID/maps lines: "start-end perms offset major:minor inode path".
 * Paths may contain spaces and end in " (deleted)" (flagged and removed);
 * pseudo paths ([heap], [vdso]...) and anonymous mappings ("") are kept. */
#ifndef FORMATS_PROCMAPS_H
#define FORMATS_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct procmaps_entry {
	uint64_t start, end, offset, inode;
	unsigned dev_major, dev_minor;
	bool exec, deleted;
	char *path;
};

/* Lines that do not parse are skipped. 0 or -ENOMEM. */
int procmaps_parse(const char *text, size_t len, struct procmaps_entry **out, size_t *n);
void procmaps_free(struct procmaps_entry *e, size_t n);

#endif
