# bpftrace-rec: BPF programs (CO-RE, clang -target bpf) -> bpftool skeletons ->
# a libbpf loader linked with libelf, libdw and zlib.
CLANG   ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
OUT     := build
ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -I. -I$(OUT)
LDLIBS  := -lbpf -lelf -ldw -lz
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

.PHONY: all clean install demo test test-kernels unit-tests deps format format-check workloads bench-helpers
all: bpftrace-rec $(UNIT_BIN)

$(OUT)/%.bpf.o: bpf/%.bpf.c bpf/events.h bpf/maps.bpf.h vmlinux/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUT)/user/%.o: user/%.c $(SKELS) $(wildcard user/*.h) $(wildcard formats/*.h) bpf/events.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/formats/%.o: formats/%.c $(wildcard formats/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

bpftrace-rec: $(USER_OBJ) $(FORMATS_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(OUT)/tests/test_%: tests/unit/test_%.c $(wildcard tests/unit/*.h) $(FORMATS_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(FORMATS_OBJ) $(LDLIBS)

# The unwinder is user/ code but unit-testable alone (libdw only).
$(OUT)/tests/test_unwind: tests/unit/test_unwind.c $(wildcard tests/unit/*.h) $(OUT)/user/unwind.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(OUT)/user/unwind.o $(LDLIBS)

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

install: bpftrace-rec
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 bpftrace-rec $(DESTDIR)$(PREFIX)/bin/bpftrace-rec

deps:
	bash scripts/install-deps.sh

# Install what is missing, build, record the bundled demo, print its top functions.
demo: deps
	$(MAKE) all
	bash scripts/demo.sh

# Every test; the last line is "N passed, N failed".
test: deps
	$(MAKE) all
	bash tests/run.sh

# The guest suite (tests/kernels/guest-suite.sh) on the host kernel and in
# qemu on Debian's 5.10, 6.1 and 6.12 kernels; KERNELS="6.1" picks some.
test-kernels: all
	bash scripts/test-kernels.sh

FORMAT_SRC = bpf/*.c bpf/*.h user/*.c user/*.h formats/*.c formats/*.h tests/unit/*.c tests/unit/*.h \
	     tests/workloads/*.c scripts/helper-cost/*.c scripts/interrupt-gaps/*.c
format:
	clang-format -i $(FORMAT_SRC)

# Fails on code that `make format` would change.
format-check:
	clang-format --dry-run -Werror $(FORMAT_SRC)

clean:
	rm -rf $(OUT) bpftrace-rec

# Test and demo workloads: frame pointers on, as the sampler walks them.
WL_CFLAGS := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Werror
WORKLOADS := $(OUT)/workloads/split $(OUT)/workloads/syscalls $(OUT)/workloads/calls $(OUT)/workloads/leafy $(OUT)/workloads/spin \
	     $(OUT)/workloads/deep
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
$(OUT)/workloads/spin: tests/workloads/spin.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Werror -o $@ $< -pthread
