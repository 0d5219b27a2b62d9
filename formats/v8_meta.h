/* V8's postmortem metadata: the v8dbg_* int constants a node binary (or a
 * libnode.so) exports, as debuggers read them (llnode, mdb_v8), turned
 * into the layout the frame step and the naming read by. Pure C over a
 * lookup callback: user/runtime/v8.c reads the values from the binary. */
#ifndef FORMATS_V8_META_H
#define FORMATS_V8_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "formats/v8_string.h"

struct v8_layout {
	struct v8_string_layout str;
	/* The frame's slots, in bytes from rbp. */
	int32_t fp_function, fp_context, fp_bc_array, fp_bc_offset;
	uint32_t jsf_shared;				  /* JSFunction::shared */
	uint32_t sfi_name_or_scope, sfi_data, sfi_script; /* SharedFunctionInfo */
	uint32_t script_name;				  /* Script::name */
	uint32_t type_sfi, type_script, type_scope_info;  /* instance types */
	int32_t scope_first_vars, scope_ncontextlocals;	  /* ScopeInfo's slot indices */
	/* Lines (optional: lines is false when a constant is missing or the
	 * BytecodeArray's layout is not one known here; frames are named
	 * without lines). */
	bool lines;
	uint32_t bca_data;			  /* BytecodeArray's bytecodes: its header's size */
	uint32_t bca_srcpos;			  /* BytecodeArray::source_position_table */
	uint32_t fab_length, fa_data;		  /* FixedArrayBase::length, FixedArray's slots */
	uint32_t script_source, script_line_ends; /* Script */
	uint32_t type_byte_array, type_bytecode_array, type_fixed_array;
	/* A baseline function's data is its Code, which holds its bytecode. */
	uint32_t code_bytecode, type_code;
	/* Inlined frames of optimized code (optional as lines, which they
	 * need: inlining is false without them): an InstructionStream's
	 * instructions (its header's size) and type; a Code's deoptimization
	 * data and source position table; the DeoptimizationData's slots. */
	bool inlining;
	uint32_t is_istart, type_istream;
	uint32_t code_deopt, code_srcpos;
	int32_t dd_inl_pos, dd_literals, dd_sfi;
};

/* Looks up the constant v8dbg_NAME (name without the prefix): 0 and *v, or
 * -ENOENT. */
typedef int (*v8_meta_get)(void *ctx, const char *name, int32_t *v);

/* The layout from the constants: 0, or -ENOTSUP with err naming the first
 * constant missing or out of range. */
int v8_meta_layout(v8_meta_get get, void *ctx, struct v8_layout *out, char *err, size_t errlen);

/* The i-th name v8_meta_layout asks for (for user/runtime/v8.c's scan of the
 * binary), or NULL past the last. */
const char *v8_meta_name(size_t i);

#endif
