/* A compiled Java frame's chain of inlined methods as named frames, for
 * user/runtime/jvm.c's jvm_frame_names. Apart from the process (the methods
 * are read through a callback) so that tests/unit/test_jvm_chain.c runs it
 * on chains whose reads fail where the test says. */
#ifndef USER_JVM_CHAIN_H
#define USER_JVM_CHAIN_H

#include <stddef.h>
#include <stdint.h>
#include "formats/jvm_debuginfo.h"
#include "user/runtime/jvm.h"

/* The frame standing where a chain could not be read whole: the methods
 * there are not known (a Method* freed with its class, a scope naming no
 * metadata entry, scopes data that does not decode). */
#define JVM_CHAIN_CUT_NAME "[inlined methods unreadable]"
/* One object (user/runtime/jvm.c's), compared by its address: the
 * namers tell the mark from a method by it. */
extern const struct jvm_method jvm_chain_cut;

/* One method read: 0 and *out (the method, and the line of bci: 0 when not
 * known or bci < 0); nonzero when it cannot be read now. */
typedef int (*jvm_method_read_fn)(void *ctx, uint64_t method, int32_t bci, struct jvm_named *out);

/* The frames of the scope chain sc[0, k) (innermost first, as
 * jvm_scopes_chain gives it; k < 0: the chain did not decode), whose
 * methods are meta[metadata_index - 1], into out (at most max, max >= 2):
 * their number. A chain read whole is its methods. A chain cut (a method
 * not read, an index outside meta, k < 0, more scopes than max) is the
 * methods read before the cut, then jvm_chain_cut, then the frame's own
 * method (root, at its scope's bci) if it reads: the methods named are
 * true, and a callee is never shown under a caller it was not called from
 * with the frames between them dropped. k == 0 (no scopes): 0, the caller
 * names the frame's own method. */
static inline int jvm_chain_names(const struct jvm_scope *sc, int k, const uint64_t *meta,
				  size_t nmeta, uint64_t root, jvm_method_read_fn read, void *ctx,
				  struct jvm_named *out, int max)
{
	int n = 0, i = 0;

	if (k == 0 || max < 2)
		return 0;
	for (; i < k && n < max; i++) {
		uint32_t mi = sc[i].metadata_index;

		if (mi == 0 || mi > nmeta || read(ctx, meta[mi - 1], sc[i].bci, &out[n]))
			break;
		n++;
	}
	if (k > 0 && i == k)
		return n;
	if (n > max - 2)
		n = max - 2;
	out[n++] = (struct jvm_named){&jvm_chain_cut, 0};
	if (!read(ctx, root, k > 0 ? sc[k - 1].bci : -1, &out[n]))
		n++;
	return n;
}

#endif
