# bpftrace-rec: BPF programs (CO-RE, clang -target bpf) -> bpftool skeletons ->
# a libbpf loader linked with libelf, libdw and zlib.
CLANG   ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
# SANITIZE=1: the tool, the unit tests and all they link are built with ASan
# and UBSan into their own directory, so the normal build is left alone.
# They are compiled by clang: its runtime holds ASan and UBSan in one
# library, so UBSan's reports also honour log_path (tests/run.sh collects
# them there); gcc's separate libubsan only writes to stderr.
ifeq ($(SANITIZE),1)
OUT     := build-san
SAN_CC  := $(CLANG)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
BIN     := $(OUT)/bpftrace-rec
else
OUT     := build
SAN_FLAGS :=
SAN_CC  := $(CC)
BIN     := bpftrace-rec
endif
ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SAN_FLAGS) -I. -I$(OUT)
# libiberty: cplus_demangle, which demangles Rust (legacy and v0) as well as
# C++; __cxa_demangle leaves the legacy hash and fails on v0.
LDLIBS  := -lbpf -lelf -ldw -lz -liberty
# Clang for BPF: CO-RE against the checked-in vmlinux.h.
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -I. $(WARN) -Wno-unused-parameter

BPF_SRC     := $(wildcard bpf/*.bpf.c)
BPF_OBJ     := $(patsubst bpf/%.bpf.c,$(OUT)/%.bpf.o,$(BPF_SRC))
SKELS       := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRC))
USER_SRC    := $(wildcard user/*.c)
USER_OBJ    := $(patsubst %.c,$(OUT)/%.o,$(USER_SRC))
FORMATS_SRC := $(wildcard formats/*.c)
FORMATS_OBJ := $(patsubst %.c,$(OUT)/%.o,$(FORMATS_SRC))
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
UNIT_BIN    := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRC))
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)

# Keep the BPF objects: bpftool reads them, and rebuilding them is not free.
.SECONDARY:

.PHONY: all clean install demo test unit-tests deps format format-check workloads bench-helpers fuzz test-kernels
all: $(BIN) $(UNIT_BIN)

$(OUT)/%.bpf.o: bpf/%.bpf.c bpf/events.h bpf/maps.bpf.h bpf/cfi.h bpf/cfi_walk.bpf.h bpf/offcpu.bpf.h bpf/uprobe_regs.bpf.h vmlinux/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUT)/user/%.o: user/%.c $(SKELS) $(wildcard user/*.h) $(wildcard formats/*.h) bpf/events.h
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/formats/%.o: formats/%.c $(wildcard formats/*.h)
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -c $< -o $@

$(BIN): $(USER_OBJ) $(FORMATS_OBJ)
	$(SAN_CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(OUT)/tests/test_%: tests/unit/test_%.c $(wildcard tests/unit/*.h) $(FORMATS_OBJ)
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(FORMATS_OBJ) $(LDLIBS)

# The unwinder is user/ code but unit-testable alone (libdw only). The test
# unwinds its own functions, whose frame layout it knows: it is compiled
# without sanitizers even in the sanitizer build (ASan's redzones would move
# that layout), and linked with them for unwind.o.
$(OUT)/tests/test_unwind: tests/unit/test_unwind.c $(wildcard tests/unit/*.h) $(OUT)/user/unwind.o \
			  $(OUT)/user/util.o $(OUT)/formats/util.o
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SAN_FLAGS),$(ALL_CFLAGS)) -Itests/unit -c -o $@.o $<
	$(SAN_CC) $(ALL_CFLAGS) -o $@ $@.o $(OUT)/user/unwind.o $(OUT)/user/util.o $(OUT)/formats/util.o \
		$(LDLIBS)

# The symbol readers are user/ code too, unit-testable with util.o alone.
# Their library of C++ and Rust names and symbol versions, stripped.
$(OUT)/tests/libnames.so: tests/unit/names_lib.c tests/unit/names_lib.map
	@mkdir -p $(@D)
	$(CC) -O2 -fPIC -shared -Wl,--version-script=tests/unit/names_lib.map -o $@.tmp $<
	strip -o $@ $@.tmp && rm -f $@.tmp
$(OUT)/tests/test_symbols: tests/unit/test_symbols.c $(wildcard tests/unit/*.h) $(OUT)/user/symbols.o \
			   $(OUT)/user/util.o $(OUT)/formats/util.o $(OUT)/formats/gopclntab.o \
			   $(OUT)/tests/libnames.so
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(OUT)/user/symbols.o $(OUT)/user/util.o \
		$(OUT)/formats/util.o $(OUT)/formats/gopclntab.o $(LDLIBS)

# The unwind tables for BPF (user/cfi_table.c), walked over this test's own
# stacks and compared with the unwinder above: compiled without sanitizers
# for the same reason, and linked with both.
# Its libraries with only .debug_frame (plain and compressed) are read, not run.
$(OUT)/user/cfi_table.o: bpf/cfi.h
CFI_DF_FLAGS := -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -shared -fPIC -nostdlib
$(OUT)/tests/libcfi_debug_frame.so: tests/unit/cfi_debug_frame.c
	@mkdir -p $(@D)
	$(CC) $(CFI_DF_FLAGS) -o $@ $<
$(OUT)/tests/libcfi_debug_frame_z.so: tests/unit/cfi_debug_frame.c
	@mkdir -p $(@D)
	$(CC) $(CFI_DF_FLAGS) -Wl,--compress-debug-sections=zlib -o $@ $<
$(OUT)/tests/test_cfi_table: tests/unit/test_cfi_table.c $(wildcard tests/unit/*.h) $(OUT)/user/cfi_table.o \
			     $(OUT)/user/unwind.o $(OUT)/user/util.o $(OUT)/formats/util.o \
			     $(OUT)/tests/libcfi_debug_frame.so \
			     $(OUT)/tests/libcfi_debug_frame_z.so
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SAN_FLAGS),$(ALL_CFLAGS)) -Itests/unit -c -o $@.o $<
	$(SAN_CC) $(ALL_CFLAGS) -o $@ $@.o $(OUT)/user/cfi_table.o $(OUT)/user/unwind.o \
		$(OUT)/user/util.o $(OUT)/formats/util.o $(LDLIBS)

# The BPF CFI walk against libdwfl on the same samples: real BPF (root),
# the sampler's skeleton, the table loader and the unwinder.
$(OUT)/tests/test_cfi_bpf: tests/unit/test_cfi_bpf.c $(wildcard tests/unit/*.h) $(OUT)/sample.skel.h \
			   $(OUT)/user/cfi_maps.o $(OUT)/user/cfi_table.o $(OUT)/user/unwind.o \
			   $(OUT)/user/util.o $(OUT)/formats/util.o $(OUT)/workloads/nofp
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(OUT)/user/cfi_maps.o $(OUT)/user/cfi_table.o \
		$(OUT)/user/unwind.o $(OUT)/user/util.o $(OUT)/formats/util.o $(LDLIBS)

unit-tests: $(UNIT_BIN)

# scripts/bench-helpers.sh: one BPF program per piece of a sample's cost.
$(OUT)/helper_cost.bpf.o: scripts/helper-cost/helper_cost.bpf.c vmlinux/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/helper-cost: scripts/helper-cost/helper_cost.c $(OUT)/helper_cost.skel.h
	$(CC) $(ALL_CFLAGS) -o $@ $< -lbpf -lelf -lz

# scripts/bench-gaps.sh: the time a pinned thread loses to each sampler's interrupt.
$(OUT)/interrupt-gaps: scripts/interrupt-gaps/gaps.c
	$(CC) $(ALL_CFLAGS) -o $@ $<

bench-helpers: $(OUT)/helper-cost $(OUT)/interrupt-gaps workloads

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/bpftrace-rec

deps:
	bash scripts/install-deps.sh

# Install what is missing, build, record the bundled demo, print its top functions.
demo: deps
	$(MAKE) all
	bash scripts/demo.sh

# Every test; the last line is "N passed, N failed". With SANITIZE=1, of the
# sanitizer build (tests/run.sh then fails on any sanitizer report).
test: deps
	$(MAKE) all
	BPFTRACE_REC_BUILD=$(OUT) BPFTRACE_REC=$(BIN) SANITIZE=$(SANITIZE) bash tests/run.sh

# libFuzzer targets of every parser of outside input (tests/fuzz/fuzz_*.c),
# each run for FUZZ_SECONDS; fails when one finds a crash. Their objects are
# built apart (clang, -fsanitize=fuzzer-no-link) in build/fuzz.
FUZZ_OUT    := build/fuzz
FUZZ_CC     ?= clang
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -O1 -g $(FUZZ_SAN) -I.
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN    := $(patsubst tests/fuzz/%.c,$(FUZZ_OUT)/%,$(FUZZ_SRC))
# symbols.c and what it needs of util.c, without the BPF skeletons.
FUZZ_OBJ    := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(FORMATS_SRC) user/symbols.c user/util.c)

$(FUZZ_OUT)/obj/%.o: %.c $(wildcard formats/*.h) $(wildcard user/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LDLIBS)

FUZZ_SECONDS ?= 30
fuzz: $(FUZZ_BIN) workloads
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_BIN)

# The guest suite (tests/kernels/guest-suite.sh) on the host kernel and in
# qemu on Debian's 5.10, 6.1 and 6.12 kernels; KERNELS="6.1" picks some.
test-kernels: all
	bash scripts/test-kernels.sh

FORMAT_SRC = bpf/*.c bpf/*.h user/*.c user/*.h formats/*.c formats/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c \
	     tests/workloads/*.c scripts/helper-cost/*.c scripts/interrupt-gaps/*.c
format:
	clang-format -i $(FORMAT_SRC)

# Fails on code that `make format` would change.
format-check:
	clang-format --dry-run -Werror $(FORMAT_SRC)

clean:
	rm -rf $(OUT) $(BIN)

# Test and demo workloads: frame pointers on, as the sampler walks them.
WL_CFLAGS := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Werror
WORKLOADS := $(OUT)/workloads/split $(OUT)/workloads/syscalls $(OUT)/workloads/calls $(OUT)/workloads/leafy $(OUT)/workloads/spin \
	     $(OUT)/workloads/deep $(OUT)/workloads/jitspin $(OUT)/workloads/execspin $(OUT)/workloads/nofp \
	     $(OUT)/workloads/recurse \
	     $(OUT)/workloads/mixed $(OUT)/workloads/cxxalloc $(OUT)/workloads/waits \
	     $(OUT)/workloads/cxxsplit $(OUT)/workloads/frees $(OUT)/workloads/gowork
workloads: $(WORKLOADS)
all: workloads
$(OUT)/workloads/libwork.so: tests/workloads/libwork.c tests/workloads/work.h
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -fPIC -shared -o $@ $<
$(OUT)/workloads/split: tests/workloads/split.c $(OUT)/workloads/libwork.so
	$(CC) $(WL_CFLAGS) -o $@ $< -L$(OUT)/workloads -lwork -Wl,-rpath,'$$ORIGIN' -pthread
$(OUT)/workloads/syscalls: tests/workloads/syscalls.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
$(OUT)/workloads/calls: tests/workloads/calls.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $< -pthread
# The same program instrumented by XRay itself, to compare call counts.
$(OUT)/workloads/calls-xray: tests/workloads/calls.c
	@mkdir -p $(@D)
	$(CLANG) -O1 -g -fxray-instrument -fxray-instruction-threshold=1 -DWITH_XRAY -o $@ $< -pthread
# gcc -O2 with frame pointers: leaves still get no frame (the leaf-caller fix).
$(OUT)/workloads/leafy: tests/workloads/leafy.c
	@mkdir -p $(@D)
	gcc -O2 -g -fno-omit-frame-pointer -Wall -Werror -o $@ $<
$(OUT)/workloads/deep: tests/workloads/deep.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
# Go, for source lines from .gopclntab (golang-go, from make deps).
$(OUT)/workloads/gowork: tests/workloads/gowork.go
	@mkdir -p $(@D)
	GO111MODULE=off GOCACHE=$(abspath $(OUT))/go-cache go build -o $@ $<
$(OUT)/workloads/frees: tests/workloads/frees.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
$(OUT)/workloads/execspin: tests/workloads/execspin.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
$(OUT)/workloads/jitspin: tests/workloads/jitspin.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
# Without frame pointers, for the CFI walk's test (tests/unit/test_cfi_bpf.c).
$(OUT)/workloads/nofp: tests/workloads/nofp.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fomit-frame-pointer -Wall -Werror -o $@ $<
# Deep recursion without frame pointers (tests/integration/test_deep_stacks.sh).
$(OUT)/workloads/recurse: tests/workloads/recurse.c
	@mkdir -p $(@D)
	gcc -O2 -g -fomit-frame-pointer -Wall -Werror -o $@ $<
# Without frame pointers, calling a library with them and a CFI-less stub.
$(OUT)/workloads/mixed: tests/workloads/mixed.c $(OUT)/workloads/libwork.so
	$(CC) -O2 -g -fomit-frame-pointer -Wall -Werror -o $@ $< -L$(OUT)/workloads -lwork \
		-Wl,-rpath,'$$ORIGIN'
$(OUT)/workloads/cxxalloc: tests/workloads/cxxalloc.cc
	@mkdir -p $(@D)
	g++ -O2 -g -fno-omit-frame-pointer -Wall -Werror -o $@ $<
$(OUT)/workloads/waits: tests/workloads/waits.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $< -pthread
# C++ names (templates, namespaces, std:: types) for the demangling tests.
$(OUT)/workloads/cxxsplit: tests/workloads/cxxsplit.cc
	@mkdir -p $(@D)
	g++ $(WL_CFLAGS) -o $@ $<
$(OUT)/workloads/spin: tests/workloads/spin.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Werror -o $@ $< -pthread
