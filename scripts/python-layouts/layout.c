/* Prints one struct py_layout initializer (bpf/runtime/python.h) for the CPython
 * whose headers it is compiled against: scripts/gen-python-layouts.sh
 * builds it once per interpreter with -DPy_BUILD_CORE, which the internal
 * headers (_PyRuntimeState, PyInterpreterState, _PyInterpreterFrame) need. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x03090000
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#else
#include <internal/pycore_pystate.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#endif

#define OFF(t, f) ((unsigned)offsetof(t, f))
#define NONE	  "PY_OFF_NONE"

/* The bit where a PyASCIIObject state bitfield starts: set it alone. */
#define STATE_SHIFT(field)                                                                         \
	({                                                                                         \
		PyASCIIObject o;                                                                   \
		unsigned w = 0, s = 0;                                                             \
		memset(&o, 0, sizeof(o));                                                          \
		o.state.field = 1;                                                                 \
		memcpy(&w, (char *)&o + offsetof(PyASCIIObject, state), sizeof(w));                \
		while (w && !(w & 1u << s))                                                        \
			s++;                                                                       \
		s;                                                                                 \
	})

static void off(const char *name, unsigned v)
{
	printf("\t.%s = %u,\n", name, v);
}
static void none(const char *name)
{
	printf("\t.%s = " NONE ",\n", name);
}

int main(void)
{
	printf("{\n\t.version = 0x%x, /* %s */\n", PY_MAJOR_VERSION << 8 | PY_MINOR_VERSION,
	       PY_VERSION);
#if PY_VERSION_HEX >= 0x030b0000
	off("lasti_kind", 2); /* PY_LASTI_PTR */
#elif PY_VERSION_HEX >= 0x030a0000
	off("lasti_kind", 1); /* PY_LASTI_UNITS */
#else
	off("lasti_kind", 0); /* PY_LASTI_BYTES */
#endif
#if PY_VERSION_HEX >= 0x030c0000
	off("owner_cstack", FRAME_OWNED_BY_CSTACK);
#else
	off("owner_cstack", 0xff);
#endif
	off("runtime_interp_head", OFF(_PyRuntimeState, interpreters.head));
	off("interp_next", OFF(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
	off("interp_tstate_head", OFF(PyInterpreterState, threads.head));
#else
	off("interp_tstate_head", OFF(PyInterpreterState, tstate_head));
#endif
	off("tstate_next", OFF(PyThreadState, next));
	off("tstate_thread_id", OFF(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	off("tstate_native_thread_id", OFF(PyThreadState, native_thread_id));
#else
	none("tstate_native_thread_id"); /* the kernel's tid: 3.11 on */
#endif
#if PY_VERSION_HEX >= 0x030d0000
	off("tstate_frame", OFF(PyThreadState, current_frame));
	none("cframe_current_frame");
#elif PY_VERSION_HEX >= 0x030b0000
	off("tstate_frame", OFF(PyThreadState, cframe));
	off("cframe_current_frame", OFF(_PyCFrame, current_frame));
#else
	off("tstate_frame", OFF(PyThreadState, frame));
	none("cframe_current_frame");
#endif
#if PY_VERSION_HEX >= 0x030b0000
	off("frame_back", OFF(_PyInterpreterFrame, previous));
	off("frame_owner", OFF(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030d0000
	off("frame_code", OFF(_PyInterpreterFrame, f_executable));
	off("frame_lasti", OFF(_PyInterpreterFrame, instr_ptr));
#else
	off("frame_code", OFF(_PyInterpreterFrame, f_code));
	off("frame_lasti", OFF(_PyInterpreterFrame, prev_instr));
#endif
#if PY_VERSION_HEX < 0x030c0000
	off("frame_is_entry", OFF(_PyInterpreterFrame, is_entry));
#else
	none("frame_is_entry");
#endif
#else
	off("frame_back", OFF(PyFrameObject, f_back));
	off("frame_code", OFF(PyFrameObject, f_code));
	off("frame_lasti", OFF(PyFrameObject, f_lasti));
	none("frame_owner");
	none("frame_is_entry");
#endif
	off("code_name", OFF(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
	off("code_qualname", OFF(PyCodeObject, co_qualname));
#else
	none("code_qualname");
#endif
	off("code_filename", OFF(PyCodeObject, co_filename));
	off("code_firstlineno", OFF(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030a0000
	off("code_lines", OFF(PyCodeObject, co_linetable));
#else
	off("code_lines", OFF(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	off("code_code", OFF(PyCodeObject, co_code_adaptive));
	off("code_size", OFF(PyVarObject, ob_size));
#else
	off("code_code", OFF(PyCodeObject, co_code));
	none("code_size");
#endif
	off("object_type", OFF(PyObject, ob_type));
	off("bytes_size", OFF(PyVarObject, ob_size));
	off("bytes_data", OFF(PyBytesObject, ob_sval));
	off("unicode_length", OFF(PyASCIIObject, length));
	off("unicode_state", OFF(PyASCIIObject, state));
	off("unicode_ascii", sizeof(PyASCIIObject));
	off("unicode_compact", sizeof(PyCompactUnicodeObject));
	off("state_kind_shift", STATE_SHIFT(kind));
	off("state_compact_shift", STATE_SHIFT(compact));
	off("state_ascii_shift", STATE_SHIFT(ascii));
#if PY_VERSION_HEX >= 0x030c0000
	off("state_ready_shift", 0xff); /* every string is ready */
#else
	off("state_ready_shift", STATE_SHIFT(ready));
#endif
	/* 3.12: the thread's data stack, where the frame an evaluation call
	 * enters or leaves is while it is not linked, and the generator whose
	 * frame it is entering (bpf/runtime/python.bpf.c's py_pending). Not 3.11 (is_entry frames,
	 * no shim to check the frame against) nor 3.13, whose _Py_DebugOffsets do not give them. */
#if PY_VERSION_HEX >= 0x030c0000 && PY_VERSION_HEX < 0x030d0000
	off("tstate_datastack_chunk", OFF(PyThreadState, datastack_chunk));
	off("tstate_datastack_top", OFF(PyThreadState, datastack_top));
	off("chunk_data", OFF(_PyStackChunk, data));
	off("code_framesize", OFF(PyCodeObject, co_framesize));
	off("tstate_exc_info", OFF(PyThreadState, exc_info));
	off("gen_exc_state", OFF(PyGenObject, gi_exc_state));
	off("gen_iframe", OFF(PyGenObject, gi_iframe));
#else
	none("tstate_datastack_chunk");
	none("tstate_datastack_top");
	none("chunk_data");
	none("code_framesize");
	none("tstate_exc_info");
	none("gen_exc_state");
	none("gen_iframe");
#endif
	printf("},\n");
	return 0;
}
