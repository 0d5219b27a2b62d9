/* V8's postmortem metadata (formats/v8_meta.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "formats/v8_meta.h"

/* What each constant is: where it goes, and its range. */
enum kind { K_U32, K_FP, K_IDX, K_SMI_SHIFT, K_NEG_MASK, K_OPT, K_INL, K_INL_IDX };

static const struct field {
	const char *name;
	size_t off; /* in struct v8_layout */
	enum kind k;
} fields[] = {
#define S(f) offsetof(struct v8_layout, str.f)
#define L(f) offsetof(struct v8_layout, f)
    {"class_HeapObject__map__Map", S(map), K_U32},
    {"class_Map__instance_type__uint16_t", S(map_type), K_U32},
    {"class_String__length__int32_t", S(length), K_U32},
    {"class_SeqOneByteString__chars__char", S(seq1_data), K_U32},
    {"class_SeqTwoByteString__chars__char", S(seq2_data), K_U32},
    {"class_ConsString__first__String", S(cons_first), K_U32},
    {"class_ConsString__second__String", S(cons_second), K_U32},
    {"class_SlicedString__parent__String", S(sliced_parent), K_U32},
    {"class_SlicedString__offset__SMI", S(sliced_offset), K_U32},
    {"class_ThinString__actual__String", S(thin_actual), K_U32},
    {"FirstNonstringType", S(first_nonstring), K_U32},
    {"StringRepresentationMask", S(repr_mask), K_U32},
    {"StringEncodingMask", S(enc_mask), K_U32},
    {"OneByteStringTag", S(one_byte_tag), K_U32},
    {"SeqStringTag", S(seq_tag), K_U32},
    {"ConsStringTag", S(cons_tag), K_U32},
    {"SlicedStringTag", S(sliced_tag), K_U32},
    {"ThinStringTag", S(thin_tag), K_U32},
    {"HeapObjectTag", S(heap_tag), K_U32},
    {"HeapObjectTagMask", S(heap_tag_mask), K_U32},
    {"SmiShiftSize", S(smi_shift), K_SMI_SHIFT},
    {"off_fp_function", L(fp_function), K_FP},
    {"off_fp_context", L(fp_context), K_FP},
    {"off_fp_bytecode_array", L(fp_bc_array), K_FP},
    {"off_fp_bytecode_offset", L(fp_bc_offset), K_FP},
    {"class_JSFunction__shared__SharedFunctionInfo", L(jsf_shared), K_U32},
    {"class_SharedFunctionInfo__name_or_scope_info__Object", L(sfi_name_or_scope), K_U32},
    {"class_SharedFunctionInfo__function_data__Object", L(sfi_data), K_U32},
    {"class_SharedFunctionInfo__script_or_debug_info__HeapObject", L(sfi_script), K_U32},
    {"class_Script__name__Object", L(script_name), K_U32},
    {"type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", L(type_sfi), K_U32},
    {"type_Script__SCRIPT_TYPE", L(type_script), K_U32},
    {"type_ScopeInfo__SCOPE_INFO_TYPE", L(type_scope_info), K_U32},
    {"scopeinfo_idx_first_vars", L(scope_first_vars), K_IDX},
    {"scopeinfo_idx_ncontextlocals", L(scope_ncontextlocals), K_IDX},
    /* For lines only (K_OPT: a U32 that may be missing). */
    {"class_BytecodeArray__data__uintptr_t", L(bca_data), K_OPT},
    {"class_FixedArrayBase__length__SMI", L(fab_length), K_OPT},
    {"class_FixedArray__data__uintptr_t", L(fa_data), K_OPT},
    {"class_Script__source__Object", L(script_source), K_OPT},
    {"class_Script__line_ends__Object", L(script_line_ends), K_OPT},
    {"type_ByteArray__BYTE_ARRAY_TYPE", L(type_byte_array), K_OPT},
    {"type_BytecodeArray__BYTECODE_ARRAY_TYPE", L(type_bytecode_array), K_OPT},
    {"type_FixedArray__FIXED_ARRAY_TYPE", L(type_fixed_array), K_OPT},
    {"class_Code__bytecode_or_interpreter_data__HeapObject", L(code_bytecode), K_OPT},
    {"type_Code__CODE_TYPE", L(type_code), K_OPT},
    /* For inlined frames only (K_INL, K_INL_IDX: may be missing). */
    {"class_InstructionStream__instruction_start__uintptr_t", L(is_istart), K_INL},
    {"type_InstructionStream__INSTRUCTION_STREAM_TYPE", L(type_istream), K_INL},
    {"class_Code__deoptimization_data__FixedArray", L(code_deopt), K_INL},
    {"class_Code__source_position_table__ByteArray", L(code_srcpos), K_INL},
    {"DeoptimizationDataInliningPositionsIndex", L(dd_inl_pos), K_INL_IDX},
    {"DeoptimizationDataLiteralArrayIndex", L(dd_literals), K_INL_IDX},
    {"DeoptimizationDataSharedFunctionInfoIndex", L(dd_sfi), K_INL_IDX},
#undef S
#undef L
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

const char *v8_meta_name(size_t i)
{
	return i < NFIELDS ? fields[i].name : NULL;
}

int v8_meta_layout(v8_meta_get get, void *ctx, struct v8_layout *out, char *err, size_t errlen)
{
	bool opt_missing = false, inl_missing = false;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct field *f = &fields[i];
		int32_t v;
		int ok;

		if (f->k == K_OPT && get(ctx, f->name, &v)) {
			opt_missing = true;
			continue;
		}
		if ((f->k == K_INL || f->k == K_INL_IDX) && get(ctx, f->name, &v)) {
			inl_missing = true;
			continue;
		}
		if (get(ctx, f->name, &v)) {
			snprintf(err, errlen, "its V8 metadata has no v8dbg_%s", f->name);
			return -ENOTSUP;
		}
		switch (f->k) {
		case K_U32: /* offsets within an object's first KiB; tags, masks, types */
		case K_OPT:
		case K_INL:
			ok = v >= 0 && v < 0x10000;
			break;
		case K_FP: /* a slot below rbp the BPF step reads (bpf/runtime/v8.h) */
			ok = v < 0 && v >= -64 && !(v & 7);
			break;
		case K_IDX:
		case K_INL_IDX:
			ok = v >= 0 && v < 64;
			break;
		case K_SMI_SHIFT: /* 31 (64-bit Smis) or 0 (31-bit): the value's shift is one more
				   */
			ok = v == 31 || v == 0;
			v += 1;
			break;
		default:
			ok = 0;
		}
		if (!ok) {
			snprintf(err, errlen, "its v8dbg_%s (%d) is not one this tool reads",
				 f->name, (int)v);
			return -ENOTSUP;
		}
		if (f->k == K_FP || f->k == K_IDX || f->k == K_INL_IDX)
			memcpy((char *)out + f->off, &v, sizeof(v));
		else
			memcpy((char *)out + f->off, &(uint32_t){(uint32_t)v}, sizeof(uint32_t));
	}
	/* 8-byte tagged values only: pointer compression (4-byte slots) is
	 * not read by this tool. */
	if (out->str.smi_shift != 32) {
		snprintf(err, errlen,
			 "it is built with pointer compression, which is not read here");
		return -ENOTSUP;
	}
	/* The BytecodeArray's source_position_table has no constant: V8 10
	 * and 11 keep it at 32, after the length, constant pool and handler
	 * table, with 22 (11: the bytecode age moved to the SFI) or 24 bytes
	 * of ints before the bytecodes. Another layout: no lines. */
	if (!opt_missing && (out->bca_data == 54 || out->bca_data == 56) &&
	    out->fa_data >= out->fab_length + 8) {
		out->bca_srcpos = 32;
		out->lines = true;
	}
	/* An InstructionStream's header is its map and Code (what
	 * user/runtime/v8.c reads) and maybe more: its instructions after. */
	out->inlining = out->lines && !inl_missing && out->is_istart >= 16 &&
			out->is_istart < 256 && !(out->is_istart & 7);
	return 0;
}
