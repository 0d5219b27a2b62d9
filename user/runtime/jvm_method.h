/* A Java method's names and line table, read from a running HotSpot by its
 * Method*, for user/runtime/jvm.c's method cache. Apart from the process
 * (memory is read through a callback) so that tests/unit/test_jvm_method.c
 * runs it on a method whose memory becomes another's between two of its
 * reads, at each read in turn. */
#ifndef USER_JVM_METHOD_H
#define USER_JVM_METHOD_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/jvm_debuginfo.h"
#include "formats/util.h"
#include "user/runtime/jvm.h"

#define JVM_SYM_MAX   1024	  /* bytes of a class, method or signature name */
#define JVM_LINES_MAX (64u << 10) /* a line number table */

/* The offsets the reads take (from the VM's tables). */
struct jvm_method_layout {
	uint32_t m_const, c_constants, c_code_size, c_name_index, c_sig_index, c_flags, c_size;
	uint32_t cp_holder, cp_source_file, cp_size, k_name, sym_length, sym_body;
	uint32_t flag_lines; /* ConstMethod::_has_linenumber_table */
	uint32_t c_words; /* ConstMethod::_constMethod_size (0: none; no line bytes in the token) */
	/* The way back from the class to the method (jvm_method_ids); 0
	 * when the tables lack one: not checked. */
	uint32_t c_idnum, k_constants, k_methods, arr_len, arr_data;
	/* Symbol::_hash_and_refcount, its low 16 bits the count (checked when
	 * has_refcount: the tables have it). */
	uint32_t sym_refcount, has_refcount;
	/* InstanceKlass::_init_state, and its value linked (checked when
	 * k_init_state is not 0). */
	uint32_t k_init_state, linked;
	/* Interpreted frames carry their method's token (bpf/runtime/jvm.h's
	 * jvm_token, as bpf/runtime/jvm.bpf.c's method_token reads it), and
	 * are named only where the read finds it (when has_refcount, and the
	 * BPF walk can read it). */
	uint32_t tokens;
};

/* Reads len bytes at addr: the bytes read (fewer at a fault). */
typedef size_t (*jvm_mem_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* A method read: m's texts and lines are malloc'd (jvm_method_read_free). */
struct jvm_method_read {
	uint64_t cm;	/* its ConstMethod* */
	uint32_t token; /* bpf/runtime/jvm.h's jvm_token of what was read */
	struct jvm_method m;
	uint8_t *lines; /* its compressed line number table, or NULL */
	size_t nlines;
};

struct jvm_method_rd {
	const struct jvm_method_layout *l;
	jvm_mem_fn fn;
	void *ctx;
};

static inline int jvm_rd(const struct jvm_method_rd *r, uint64_t addr, void *buf, size_t len)
{
	if (!addr || addr + len < addr)
		return -EFAULT;
	return r->fn(r->ctx, addr, buf, len) == len ? 0 : -EFAULT;
}

/* What a method's names and lines are read through: its ConstMethod, the
 * constant pool and the Symbols of its class, name, signature and file.
 *
 * A method is read by its address, which a sample saw alive, but the read
 * comes later, and a class unloaded since has its memory given to the next
 * classes loaded and its Symbols to the next names made (JChurn: each load
 * of a class lands at the very same addresses; CI's jvm_churn read B's
 * oddSpin with A's "evenSpin" where B's name had been). What is checked:
 * every Symbol still referenced; the class linked; the pool's class keeps
 * that pool (InstanceKlass::_constants) and lists this very Method at its
 * idnum (_methods); and all of it read twice, before and after the texts
 * and the line table, a change between the two refusing the method. None
 * of it proves the class alive: a class unloaded, its memory whole and its
 * Symbols' memory another live Symbol's, passes. What does is the frame's
 * (user/runtime/jvm.c): a compiled frame's nmethod still has its _method;
 * an interpreted frame's token, what the BPF walk read of its method while
 * the frame ran (its names' Symbols' hashes, its code size and line table:
 * bpf/runtime/jvm.h's jvm_token), is this read's token (docs/design.md). */
struct jvm_method_ids {
	uint64_t cm, cp, holder, ksym, name_sym, sig_sym, src_sym, methods, listed, lines;
	uint16_t ni, si, code_size, flags, sfi, idnum;
	uint8_t init_state, pad[3];
	uint32_t words, token;
	uint32_t hash[4]; /* the Symbols' hashes: class, name, signature, file */
};

static inline int jvm_method_ids(const struct jvm_method_rd *r, uint64_t addr,
				 struct jvm_method_ids *m)
{
	const struct jvm_method_layout *l = r->l;

	memset(m, 0, sizeof(*m));
	if (jvm_rd(r, addr + l->m_const, &m->cm, 8) ||
	    jvm_rd(r, m->cm + l->c_constants, &m->cp, 8) ||
	    jvm_rd(r, m->cm + l->c_name_index, &m->ni, 2) ||
	    jvm_rd(r, m->cm + l->c_sig_index, &m->si, 2) ||
	    jvm_rd(r, m->cm + l->c_code_size, &m->code_size, 2) ||
	    jvm_rd(r, m->cm + l->c_flags, &m->flags, 2) ||
	    jvm_rd(r, m->cp + l->cp_holder, &m->holder, 8) ||
	    jvm_rd(r, m->holder + l->k_name, &m->ksym, 8) || !m->ni || !m->si ||
	    jvm_rd(r, m->cp + l->cp_size + 8 * (uint64_t)m->ni, &m->name_sym, 8) ||
	    jvm_rd(r, m->cp + l->cp_size + 8 * (uint64_t)m->si, &m->sig_sym, 8) ||
	    jvm_rd(r, m->cp + l->cp_source_file, &m->sfi, 2) ||
	    (m->sfi && jvm_rd(r, m->cp + l->cp_size + 8 * (uint64_t)m->sfi, &m->src_sym, 8)))
		return -EFAULT;
	/* A Symbol released (its count 0) is one of a class unloaded (JChurn:
	 * B's method read whole, its name's Symbol freed, "Worker."). */
	if (l->has_refcount) {
		uint64_t syms[4] = {m->ksym, m->name_sym, m->sig_sym, m->src_sym};

		for (int i = 0; i < 4; i++) {
			uint32_t hr = 0;

			if (syms[i] &&
			    (jvm_rd(r, syms[i] + l->sym_refcount, &hr, 4) || !(hr & 0xffff)))
				return -EFAULT;
			m->hash[i] = hr >> 16;
		}
	}
	/* The line table's first bytes that lie in the ConstMethod, as the
	 * BPF walk reads them for the token. */
	if (l->c_words && (m->flags & l->flag_lines)) {
		uint64_t at = m->cm + l->c_size + m->code_size, end;

		if (jvm_rd(r, m->cm + l->c_words, &m->words, 4))
			return -EFAULT;
		end = m->cm + 8 * (uint64_t)m->words;
		if (at < end && jvm_rd(r, at, &m->lines, end - at < 8 ? end - at : 8))
			return -EFAULT;
	}
	m->token = jvm_token(m->hash[1], m->hash[3], m->code_size, m->lines);
	/* A class not yet linked cannot have run: it is one being loaded where
	 * the sampled one was. */
	if (l->k_init_state && (jvm_rd(r, m->holder + l->k_init_state, &m->init_state, 1) ||
				m->init_state < l->linked))
		return -EFAULT;
	if (l->k_methods && l->k_constants && l->arr_data) {
		uint64_t kcp = 0;
		int32_t n = 0;

		if (jvm_rd(r, m->cm + l->c_idnum, &m->idnum, 2) ||
		    jvm_rd(r, m->holder + l->k_constants, &kcp, 8) || kcp != m->cp ||
		    jvm_rd(r, m->holder + l->k_methods, &m->methods, 8) ||
		    jvm_rd(r, m->methods + l->arr_len, &n, 4) || m->idnum >= n ||
		    jvm_rd(r, m->methods + l->arr_data + 8 * (uint64_t)m->idnum, &m->listed, 8) ||
		    m->listed != addr)
			return -EFAULT;
	}
	return 0;
}

/* A Symbol's text, NUL-terminated, cut at size - 1: 0 or -EFAULT. */
static inline int jvm_symbol(const struct jvm_method_rd *r, uint64_t sym, char *out, size_t size)
{
	uint16_t n = 0;

	if (!sym || jvm_rd(r, sym + r->l->sym_length, &n, 2))
		return -EFAULT;
	if (n >= size)
		n = (uint16_t)(size - 1);
	if (n && jvm_rd(r, sym + r->l->sym_body, out, n))
		return -EFAULT;
	out[n] = 0;
	if (memchr(out, 0, n))
		return -EFAULT; /* not a symbol's text */
	return 0;
}

static inline char *jvm_dup_sanitized(const char *s)
{
	char buf[3 * JVM_SYM_MAX];

	fmt_sanitize(buf, sizeof(buf), s, strlen(s));
	return strdup(buf);
}

static inline void jvm_method_read_free(struct jvm_method_read *out)
{
	free((char *)out->m.name);
	free((char *)out->m.sig);
	free((char *)out->m.file);
	free(out->lines);
	memset(out, 0, sizeof(*out));
}

/* The method at addr into *out: 0; -EFAULT where it does not read whole,
 * or not the same before and after; -ENOMEM. */
static inline int jvm_method_read(const struct jvm_method_rd *r, uint64_t addr,
				  struct jvm_method_read *out)
{
	char cls[JVM_SYM_MAX], name[JVM_SYM_MAX], sig[JVM_SYM_MAX], src[JVM_SYM_MAX],
	    dotted[JVM_SYM_MAX], buf[3 * JVM_SYM_MAX];
	struct jvm_method_ids ids, again;
	const char *slash;
	size_t keep, n;

	memset(out, 0, sizeof(*out));
	if (jvm_method_ids(r, addr, &ids) || jvm_symbol(r, ids.ksym, cls, sizeof(cls)) ||
	    jvm_symbol(r, ids.name_sym, name, sizeof(name)) ||
	    jvm_symbol(r, ids.sig_sym, sig, sizeof(sig)))
		return -EFAULT;
	out->cm = ids.cm;
	out->token = ids.token;
	/* java/lang/String -> java.lang.String; the file beside its package. */
	slash = strrchr(cls, '/');
	for (size_t i = 0; i <= strlen(cls); i++)
		dotted[i] = cls[i] == '/' ? '.' : cls[i];
	/* A hidden class (a lambda's) is named after its address,
	 * JSplit$$Lambda$1/0x0000000800c00a08 (shown with '+'): one name for
	 * the lambda in every process, the address in the system name only. */
	keep = strlen(dotted);
	for (const char *h = strstr(dotted, "$$"); h && *h; h++)
		if ((h[0] == '.' || h[0] == '+') && h[1] == '0' && h[2] == 'x') {
			keep = (size_t)(h - dotted);
			break;
		}
	snprintf(buf, sizeof(buf), "%.*s.%s", (int)keep, dotted, name);
	out->m.name = jvm_dup_sanitized(buf);
	snprintf(buf, sizeof(buf), "%s.%s%s", dotted, name, sig);
	out->m.sig = jvm_dup_sanitized(buf);
	if (!out->m.name || !out->m.sig) {
		jvm_method_read_free(out);
		return -ENOMEM;
	}
	if (ids.src_sym && !jvm_symbol(r, ids.src_sym, src, sizeof(src))) {
		snprintf(buf, sizeof(buf), "%.*s%s%s", slash ? (int)(slash - cls) : 0, cls,
			 slash ? "/" : "", src);
		out->m.file = jvm_dup_sanitized(buf);
	}
	if (ids.flags & r->l->flag_lines) {
		uint8_t *tab = malloc(JVM_LINES_MAX);
		uint64_t at = ids.cm + r->l->c_size + ids.code_size;

		/* What reads of it: the bytes after the table may not be mapped. */
		n = tab ? r->fn(r->ctx, at, tab, JVM_LINES_MAX) : 0;
		if (n) {
			out->lines = tab;
			out->nlines = n;
			if (jvm_line_for_bci(tab, n, 0, &out->m.first_line))
				out->m.first_line = 0;
		} else {
			free(tab);
		}
	}
	if (jvm_method_ids(r, addr, &again) || memcmp(&ids, &again, sizeof(ids))) {
		jvm_method_read_free(out);
		return -EFAULT;
	}
	return 0;
}

#endif
