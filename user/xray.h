/* XRay FDR traces per recorded process: function ids, sampled timelines,
 * traced calls, CPU migrations; written with formats/xray_fdr and the
 * instrumentation map of formats/xray_map. */
#ifndef USER_XRAY_H
#define USER_XRAY_H

#include <stdint.h>

/* The id of a function name, shared by every process's trace (ids from 1). */
uint32_t xray_func_id(const char *name);

#endif
