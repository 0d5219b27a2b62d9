/* A process that poses as a HotSpot JVM: it exports the serviceability
 * tables' symbols (gHotSpotVMStructs and its siblings, as libjvm.so does;
 * built with -rdynamic) holding what MODE says, and spins in fake_spin so
 * that it is sampled. For test_jvm.sh's hostile cases: the recorder must
 * refuse it with one line, name its frames as native code, and neither
 * crash nor hang.
 *   stride:  the struct table's stride is 0
 *   noterm:  the struct table has no terminating entry
 *   unterm:  a name with no NUL within a page
 *   missing: well-formed tables that lack CodeBlob::_name
 *   heaps:   every field the walk needs, and a code cache whose heaps
 *            array points at garbage
 * Usage: fakejvm MODE SECONDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct sentry {
	const char *type, *field, *typestr;
	int32_t is_static;
	uint64_t offset;
	void *addr;
};
struct tentry {
	const char *type, *super;
	int32_t is_oop, is_int, is_unsigned;
	uint64_t size;
};
struct centry {
	const char *name;
	int64_t value;
};

#define NE 64
static struct sentry structs[NE];
static struct tentry types[NE];
static struct centry ints[NE], longs[NE];
static void *garbage[16];

/* The exported tables, as libjvm.so's (extern "C", data). */
void *gHotSpotVMStructs = structs, *gHotSpotVMTypes = types, *gHotSpotVMIntConstants = ints,
     *gHotSpotVMLongConstants = longs;
uint64_t gHotSpotVMStructEntryTypeNameOffset = 0, gHotSpotVMStructEntryFieldNameOffset = 8,
	 gHotSpotVMStructEntryTypeStringOffset = 16, gHotSpotVMStructEntryIsStaticOffset = 24,
	 gHotSpotVMStructEntryOffsetOffset = 32, gHotSpotVMStructEntryAddressOffset = 40,
	 gHotSpotVMStructEntryArrayStride = sizeof(struct sentry);
uint64_t gHotSpotVMTypeEntryTypeNameOffset = 0, gHotSpotVMTypeEntrySuperclassNameOffset = 8,
	 gHotSpotVMTypeEntryIsOopTypeOffset = 16, gHotSpotVMTypeEntryIsIntegerTypeOffset = 20,
	 gHotSpotVMTypeEntryIsUnsignedOffset = 24, gHotSpotVMTypeEntrySizeOffset = 32,
	 gHotSpotVMTypeEntryArrayStride = sizeof(struct tentry);
uint64_t gHotSpotVMIntConstantEntryNameOffset = 0, gHotSpotVMIntConstantEntryValueOffset = 8,
	 gHotSpotVMIntConstantEntryArrayStride = sizeof(struct centry);
uint64_t gHotSpotVMLongConstantEntryNameOffset = 0, gHotSpotVMLongConstantEntryValueOffset = 8,
	 gHotSpotVMLongConstantEntryArrayStride = sizeof(struct centry);

/* Every field user/runtime/jvm.c asks for, at plausible offsets. */
static const char *const fields[][2] = {
    {"CodeBlob", "_name"},
    {"CodeBlob", "_size"},
    {"CodeBlob", "_frame_complete_offset"},
    {"CodeBlob", "_frame_size"},
    {"CodeBlob", "_code_begin"},
    {"CodeBlob", "_code_end"},
    {"CompiledMethod", "_method"},
    {"CompiledMethod", "_deopt_handler_begin"},
    {"CompiledMethod", "_scopes_data_begin"},
    {"nmethod", "_orig_pc_offset"},
    {"nmethod", "_compile_id"},
    {"nmethod", "_scopes_pcs_offset"},
    {"nmethod", "_dependencies_offset"},
    {"nmethod", "_metadata_offset"},
    {"Method", "_constMethod"},
    {"ConstMethod", "_constants"},
    {"ConstMethod", "_code_size"},
    {"ConstMethod", "_name_index"},
    {"ConstMethod", "_signature_index"},
    {"ConstMethod", "_flags"},
    {"ConstantPool", "_pool_holder"},
    {"ConstantPool", "_source_file_name_index"},
    {"Klass", "_name"},
    {"Symbol", "_length"},
    {"Symbol", "_body"},
    {"PcDesc", "_pc_offset"},
    {"PcDesc", "_scope_decode_offset"},
    {"CodeHeap", "_memory"},
    {"CodeHeap", "_segmap"},
    {"CodeHeap", "_log2_segment_size"},
    {"VirtualSpace", "_low_boundary"},
    {"VirtualSpace", "_high_boundary"},
    {"GrowableArrayBase", "_len"},
    {"GrowableArray<int>", "_data"},
};

static volatile uint64_t sink;

__attribute__((noinline)) void fake_spin(void)
{
	for (uint64_t i = 0; i < 100000; i++)
		sink += i ^ (sink >> 3);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "missing";
	double secs = argc > 2 ? atof(argv[2]) : 5;
	size_t n = sizeof(fields) / sizeof(fields[0]), i;
	struct timespec t0, t;

	for (i = 0; i < n && i < NE - 4; i++)
		structs[i] = (struct sentry){fields[i][0], fields[i][1], "int", 0, 8 * (i % 12), 0};
	structs[i++] =
	    (struct sentry){"CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, &garbage[0]};
	structs[i++] = (struct sentry){"CodeCache", "_low_bound", "address", 1, 0, &garbage[1]};
	structs[i++] = (struct sentry){"CodeCache", "_high_bound", "address", 1, 0, &garbage[2]};
	types[0] = (struct tentry){"ConstMethod", NULL, 0, 0, 0, 48};
	types[1] = (struct tentry){"ConstantPool", NULL, 0, 0, 0, 72};
	types[2] = (struct tentry){"HeapBlock", NULL, 0, 0, 0, 16};
	types[3] = (struct tentry){"PcDesc", NULL, 0, 0, 0, 16};
	ints[0] = (struct centry){"frame::interpreter_frame_last_sp_offset", -2};
	ints[1] = (struct centry){"frame::interpreter_frame_sender_sp_offset", -1};
	ints[2] = (struct centry){"ConstMethod::_has_linenumber_table", 1};
	/* heaps: a heaps array of 3 "heaps" at addresses no process maps. */
	garbage[0] = (void *)0x10;
	garbage[1] = (void *)0x1000;
	garbage[2] = (void *)0x7fffffff0000;
	if (!strcmp(mode, "stride")) {
		gHotSpotVMStructEntryArrayStride = 0;
	} else if (!strcmp(mode, "noterm")) {
		for (i = 0; i < NE; i++)
			structs[i] = (struct sentry){"T", "_f", "int", 0, 0, 0};
	} else if (!strcmp(mode, "unterm")) {
		char *page =
		    mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (page == MAP_FAILED)
			return 1;
		memset(page, 'A', 4096);
		munmap(page + 4096, 4096); /* the name runs into an unmapped page */
		structs[3].field = page;
	} else if (!strcmp(mode, "missing")) {
		structs[0].field = "_not_the_name";
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		fake_spin();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
