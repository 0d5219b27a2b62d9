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
# CPPFLAGS and LDFLAGS: Debian's build flags (dpkg-buildflags) in make deb.
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CPPFLAGS) $(CFLAGS) $(SAN_FLAGS) -I. -I$(OUT)
# libcurl (Debian's, with OpenSSL): --push's HTTP and TLS (user/push.c),
# loaded with dlopen when --push is given, not linked: linked, it and the
# libraries it needs cost every run ~6 MiB of RSS. Its header builds it
# (libcurl4-openssl-dev); libcurl4 runs it.
# libiberty: cplus_demangle, which demangles Rust (legacy and v0) as well as
# C++; __cxa_demangle leaves the legacy hash and fails on v0.
LDLIBS  := -lbpf -lelf -ldw -lz -liberty -lm
# Clang for BPF: CO-RE against the checked-in vmlinux.h.
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -I. $(WARN) -Wno-unused-parameter

# bpf/runtime/python.bpf.c, the Python walk, and bpf/runtime/jvm.bpf.c, the HotSpot walk, have
# no skeleton of their own: libbpf's
# static linker joins it to the sampler (and to its unit test's program).
RUNTIME_BPF := $(wildcard bpf/runtime/*.bpf.c)
# bpf/cfi_walk.bpf.c and bpf/offcpu.bpf.c are the sampler's too, joined to
# sample.bpf.c as the runtimes' walks are.
SAMPLER_BPF := bpf/cfi_walk.bpf.c bpf/offcpu.bpf.c
BPF_SRC     := $(filter-out $(RUNTIME_BPF) $(SAMPLER_BPF),$(wildcard bpf/*.bpf.c))
BPF_OBJ     := $(patsubst bpf/%.bpf.c,$(OUT)/%.bpf.o,$(BPF_SRC))
SKELS       := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRC))
USER_SRC    := $(wildcard user/*.c user/runtime/*.c)
USER_OBJ    := $(patsubst %.c,$(OUT)/%.o,$(USER_SRC))
FORMATS_SRC := $(wildcard formats/*.c)
FORMATS_OBJ := $(patsubst %.c,$(OUT)/%.o,$(FORMATS_SRC))
UNIT_SRC    := $(wildcard tests/unit/test_*.c)
UNIT_BIN    := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRC))
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)

# Keep the BPF objects: bpftool reads them, and rebuilding them is not free.
.SECONDARY:

.PHONY: all clean install uninstall man docs deb demo test test-stress unit-tests deps test-deps format format-check workloads \
	bench-helpers fuzz fuzz-run test-kernels
all: $(BIN) $(UNIT_BIN)

BPF_HDRS := bpf/events.h bpf/maps.bpf.h bpf/cfi.h bpf/cfi_walk.bpf.h bpf/sampler.bpf.h bpf/runtime/python.h bpf/runtime/jvm_code.h \
	    bpf/runtime/python_maps.bpf.h bpf/runtime/jvm.h bpf/runtime/jvm_maps.bpf.h bpf/runtime/v8.h bpf/runtime/v8_maps.bpf.h \
	    bpf/uprobe_regs.bpf.h bpf/heap_sample.h vmlinux/vmlinux.h
$(OUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The units joined to the runtimes' walks: python.bpf.o, jvm.bpf.o and v8.bpf.o first
# (their maps are defined there, bpf/runtime/python_maps.bpf.h says why it matters),
# then sample.bpf.o, which defines the maps and rodata cfi_walk.bpf.o and offcpu.bpf.o share.
$(OUT)/sample.linked.o: $(OUT)/runtime/python.bpf.o $(OUT)/runtime/jvm.bpf.o $(OUT)/runtime/v8.bpf.o $(OUT)/sample.bpf.o \
			$(OUT)/cfi_walk.bpf.o $(OUT)/offcpu.bpf.o
	$(BPFTOOL) gen object $@ $^
$(OUT)/sample.skel.h: $(OUT)/sample.linked.o
	$(BPFTOOL) gen skeleton $< name sample_bpf > $@.tmp && mv $@.tmp $@
$(OUT)/python_test.bpf.o: tests/unit/python_test.bpf.c $(BPF_HDRS)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(OUT)/python_test.linked.o: $(OUT)/runtime/python.bpf.o $(OUT)/python_test.bpf.o
	$(BPFTOOL) gen object $@ $^
$(OUT)/python_test.skel.h: $(OUT)/python_test.linked.o
	$(BPFTOOL) gen skeleton $< name python_test > $@.tmp && mv $@.tmp $@

# libbpf's usdt.bpf.h includes <linux/errno.h>, whose <asm/errno.h> is in
# the host's multiarch directory, not on -target bpf's include path.
$(OUT)/usdt.bpf.o: BPF_CFLAGS += -idirafter /usr/include/$(shell $(CC) -dumpmachine)

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(OUT)/user/%.o: user/%.c $(SKELS) $(wildcard user/*.h user/runtime/*.h) $(wildcard formats/*.h) bpf/events.h
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/formats/%.o: formats/%.c $(wildcard formats/*.h)
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -c $< -o $@

$(BIN): $(USER_OBJ) $(FORMATS_OBJ)
	$(SAN_CC) $(CFLAGS) $(SAN_FLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(OUT)/tests/test_%: tests/unit/test_%.c $(wildcard tests/unit/*.h) $(FORMATS_OBJ)
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(FORMATS_OBJ) $(LDLIBS)

# The inlined-method chain's naming (a user/ header, the process read
# through a callback).
$(OUT)/tests/test_jvm_chain: user/runtime/jvm_chain.h user/runtime/jvm.h

# A method's names and lines, read through a callback (a user/ header).
$(OUT)/tests/test_jvm_method: user/runtime/jvm_method.h user/runtime/jvm.h

# The BPF walk's code reader, a header it shares with its unit test.
$(OUT)/tests/test_jvm_code: bpf/runtime/jvm_code.h

# The unwinder is user/ code but unit-testable alone (libdw only). The test
# unwinds its own functions, whose frame layout it knows: it is compiled
# without sanitizers even in the sanitizer build (ASan's redzones would move
# that layout), and linked with them for unwind.o.
$(OUT)/tests/test_unwind: tests/unit/test_unwind.c $(wildcard tests/unit/*.h) $(OUT)/user/unwind.o \
			  $(OUT)/user/util.o $(OUT)/formats/util.o $(OUT)/formats/procmaps.o
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SAN_FLAGS),$(ALL_CFLAGS)) -Itests/unit -c -o $@.o $<
	$(SAN_CC) $(ALL_CFLAGS) -o $@ $@.o $(OUT)/user/unwind.o $(OUT)/user/util.o $(OUT)/formats/util.o \
		$(OUT)/formats/procmaps.o $(LDLIBS)

# LD_PRELOAD shim of the allocation-failure tests (tests/integration/test_trace_paths.sh).
$(OUT)/tests/libfailrealloc.so: tests/unit/failrealloc.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl
all: $(OUT)/tests/libfailrealloc.so

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

# The per-process model (user/proc.c): processes gone before their maps
# were read, named from their exit-time mappings.
$(OUT)/tests/test_proc: tests/unit/test_proc.c $(wildcard tests/unit/*.h) $(OUT)/user/proc.o \
			$(OUT)/user/symbols.o $(OUT)/user/unwind.o $(OUT)/user/util.o $(FORMATS_OBJ)
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(OUT)/user/proc.o $(OUT)/user/symbols.o \
		$(OUT)/user/unwind.o $(OUT)/user/util.o $(FORMATS_OBJ) $(LDLIBS)

# CPython detection, code objects and frame walk (user/runtime/python.c) on the
# real interpreters, and on programs that only look like one.
$(OUT)/tests/fake_python_%: tests/unit/fake_python.c
	@mkdir -p $(@D)
	$(CC) -O1 -rdynamic $(if $(filter 37,$*),,-DFAKE_VERSION=$(FAKE_VERSION_$*)) -o $@ $<
FAKE_VERSION_311 := 0x030b07f0
FAKE_VERSION_313 := 0x030d00f0
FAKE_VERSION_399 := 0x036300f0
$(OUT)/tests/test_python: tests/unit/test_python.c $(wildcard tests/unit/*.h) $(OUT)/user/runtime/python.o \
			  $(OUT)/user/util.o $(FORMATS_OBJ) \
			  $(patsubst %,$(OUT)/tests/fake_python_%,37 311 313 399)
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(OUT)/user/runtime/python.o $(OUT)/user/util.o \
		$(FORMATS_OBJ) $(LDLIBS)

# The Python frame walk in BPF (bpf/runtime/python.bpf.c) on the real interpreters.
$(OUT)/tests/test_python_bpf: tests/unit/test_python_bpf.c $(wildcard tests/unit/*.h) $(OUT)/python_test.skel.h \
			      $(OUT)/user/runtime/python.o $(OUT)/user/util.o $(FORMATS_OBJ)
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(OUT)/user/runtime/python.o $(OUT)/user/util.o \
		$(FORMATS_OBJ) $(LDLIBS)

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
			     $(OUT)/formats/procmaps.o $(OUT)/tests/libcfi_debug_frame.so \
			     $(OUT)/tests/libcfi_debug_frame_z.so
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SAN_FLAGS),$(ALL_CFLAGS)) -Itests/unit -c -o $@.o $<
	$(SAN_CC) $(ALL_CFLAGS) -o $@ $@.o $(OUT)/user/cfi_table.o $(OUT)/user/unwind.o \
		$(OUT)/user/util.o $(OUT)/formats/util.o $(OUT)/formats/procmaps.o $(LDLIBS)

# The BPF CFI walk against libdwfl on the same samples: real BPF (root),
# the sampler's skeleton, the table loader and the unwinder.
$(OUT)/tests/test_cfi_bpf: tests/unit/test_cfi_bpf.c $(wildcard tests/unit/*.h) $(OUT)/sample.skel.h \
			   $(OUT)/user/cfi_maps.o $(OUT)/user/cfi_table.o $(OUT)/user/unwind.o \
			   $(OUT)/user/util.o $(OUT)/formats/util.o $(OUT)/formats/procmaps.o \
			   $(OUT)/workloads/nofp
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(OUT)/user/cfi_maps.o $(OUT)/user/cfi_table.o \
		$(OUT)/user/unwind.o $(OUT)/user/util.o $(OUT)/formats/util.o $(OUT)/formats/procmaps.o \
		$(LDLIBS)

# The sampler's stack on the oldest verifiers' count (real BPF, root): its
# skeleton alone.
$(OUT)/tests/test_bpf_stack: tests/unit/test_bpf_stack.c tests/unit/check.h $(OUT)/sample.skel.h
	@mkdir -p $(@D)
	$(SAN_CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(LDLIBS)

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

# The manual page and docs/usage.md come from one source, so that they never
# disagree: docs/bpftrace-rec.8.scd (scdoc). usage.md is checked in (read on
# the web); tests/integration/test_docs.sh fails when it is stale.
MAN := $(OUT)/bpftrace-rec.8
man: $(MAN)
$(MAN): docs/bpftrace-rec.8.scd
	@mkdir -p $(@D)
	scdoc < $< > $@.tmp && mv $@.tmp $@
docs: docs/usage.md
docs/usage.md: docs/bpftrace-rec.8.scd scripts/scd2md.py
	python3 scripts/scd2md.py $< > $@.tmp && mv $@.tmp $@

# With bash completion (completion/bpftrace-rec.bash: the options from --help),
# and the systemd unit (packaging/bpftrace-rec.service.in, its ExecStart
# made this PREFIX's binary; not enabled) in $(PREFIX)/lib/systemd/system,
# which systemd reads for /usr and /usr/local alike; its settings' example
# in /etc/default (an administrator's file there is kept).
BASHCOMP := $(PREFIX)/share/bash-completion/completions
SYSTEMDDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
install: $(BIN) $(MAN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(BASHCOMP) \
		$(DESTDIR)$(SYSTEMDDIR) $(DESTDIR)$(SYSCONFDIR)/default
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/bpftrace-rec
	install -m 0644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man8/bpftrace-rec.8
	install -m 0644 completion/bpftrace-rec.bash $(DESTDIR)$(BASHCOMP)/bpftrace-rec
	sed 's|@BINDIR@|$(PREFIX)/bin|g' packaging/bpftrace-rec.service.in > $(DESTDIR)$(SYSTEMDDIR)/bpftrace-rec.service.tmp
	chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/bpftrace-rec.service.tmp
	mv $(DESTDIR)$(SYSTEMDDIR)/bpftrace-rec.service.tmp $(DESTDIR)$(SYSTEMDDIR)/bpftrace-rec.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/bpftrace-rec ] || \
		install -m 0600 packaging/bpftrace-rec.default $(DESTDIR)$(SYSCONFDIR)/default/bpftrace-rec

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/bpftrace-rec $(DESTDIR)$(PREFIX)/share/man/man8/bpftrace-rec.8 \
		$(DESTDIR)$(BASHCOMP)/bpftrace-rec $(DESTDIR)$(SYSTEMDDIR)/bpftrace-rec.service

# The Debian package (debian/), built by dpkg-buildpackage from a copy of
# the tree's files in build/deb/ (dpkg-buildpackage writes the .deb to the
# parent of the source: there, not beside this tree), then checked by
# lintian. Result: build/deb/bpftrace-rec_VERSION_amd64.deb.
DEB_DIR := build/deb
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	git ls-files -co --exclude-standard -z | grep -zv '^tools/' | \
		xargs -0 tar -cf - | tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && dpkg-buildpackage -b -us -uc
	lintian --fail-on error $(DEB_DIR)/*.changes
	@ls $(DEB_DIR)/*.deb

# What building, running and reading need (the README's table); the test
# lab (servers, peers, qemu, JIT runtimes, Chromium, packaging tools) is
# test-deps', which make test installs. scripts/install-deps.sh says more.
deps:
	bash scripts/install-deps.sh
test-deps:
	bash scripts/install-deps.sh --test

# Install what is missing, build, record the bundled demo, print its top functions.
demo: deps
	$(MAKE) all
	bash scripts/demo.sh

# Every test; the last line is "N passed, N failed". With SANITIZE=1, of the
# sanitizer build (tests/run.sh then fails on any sanitizer report).
test: test-deps
	$(MAKE) all
	BPFTRACE_REC_BUILD=$(OUT) BPFTRACE_REC=$(BIN) SANITIZE=$(SANITIZE) bash tests/run.sh

# The integration suites most sensitive to timing, beside two busy loops
# (tests/stress.sh; STRESS_TESTS= chooses them, STRESS_TESTS=all runs every
# test: ~30 min): ~6 min on 2 cores.
test-stress: test-deps
	$(MAKE) all
	BPFTRACE_REC_BUILD=$(OUT) BPFTRACE_REC=$(BIN) bash tests/stress.sh

# libFuzzer targets of every parser of outside input (tests/fuzz/fuzz_*.c),
# each run for FUZZ_SECONDS; fails when one finds a crash. Their objects are
# built apart (clang, -fsanitize=fuzzer-no-link) in build/fuzz.
FUZZ_OUT    := build/fuzz
FUZZ_CC     ?= clang
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -O1 -g $(FUZZ_SAN) -I.
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN    := $(patsubst tests/fuzz/%.c,$(FUZZ_OUT)/%,$(FUZZ_SRC))
# symbols.c, python.c and what they need of util.c, without the BPF skeletons.
FUZZ_OBJ    := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(FORMATS_SRC) user/symbols.c user/util.c user/runtime/python.c)

$(FUZZ_OUT)/obj/%.o: %.c $(wildcard formats/*.h) $(wildcard user/*.h user/runtime/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(LDLIBS)

FUZZ_SECONDS ?= 30
fuzz: test-deps
	$(MAKE) fuzz-run
fuzz-run: $(FUZZ_BIN) workloads
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_BIN)

# The guest suite (tests/kernels/guest-suite.sh) on the host kernel and in
# qemu on Debian's 5.10, 6.1 and 6.12 kernels; KERNELS="6.1" picks some.
test-kernels: test-deps
	$(MAKE) all
	bash scripts/test-kernels.sh

FORMAT_SRC = bpf/*.c bpf/*.h bpf/runtime/*.c bpf/runtime/*.h user/*.c user/*.h user/runtime/*.c user/runtime/*.h formats/*.c formats/*.h tests/unit/*.c tests/unit/*.h tests/fuzz/*.c \
	     tests/workloads/*.c scripts/helper-cost/*.c scripts/interrupt-gaps/*.c scripts/python-layouts/*.c
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
	     $(OUT)/workloads/cxxsplit $(OUT)/workloads/frees $(OUT)/workloads/gowork \
	     $(OUT)/workloads/edges \
	     $(OUT)/workloads/usdtwork $(OUT)/workloads/fakejvm $(OUT)/workloads/fakev8 \
	     $(OUT)/workloads/libfakev8.so $(OUT)/workloads/fakev8late \
	     $(OUT)/workloads/heapsplit
# Go programs, each Go by its path (PATH's `go` is whichever the machine puts
# first): Debian's 1.19 (golang-go, make deps), whose line table holds its
# text start, and the newer one the machines have at /usr/local/go (1.26:
# its table no longer does), only where it is (test_names fails without it
# in CI).
GO119  ?= /usr/lib/go-1.19/bin/go
GO_NEW ?= /usr/local/go/bin/go
WORKLOADS += $(if $(wildcard $(GO_NEW)),$(OUT)/workloads/gowork-go-new)
# The Java workload, where a JDK is installed (the test lab's): the kernel
# matrix's guests, which see this tree, run it without compiling it under
# the emulator.
WORKLOADS += $(if $(shell command -v javac 2>/dev/null),$(OUT)/workloads/java/JSplit.class)
$(OUT)/workloads/java/JSplit.class: tests/workloads/JSplit.java
	@mkdir -p $(@D)
	javac -d $(@D) $<
workloads: $(WORKLOADS)
all: workloads
$(OUT)/workloads/libwork.so: tests/workloads/libwork.c tests/workloads/work.h
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -fPIC -shared -o $@ $<
$(OUT)/workloads/split: tests/workloads/split.c $(OUT)/workloads/libwork.so
	$(CC) $(WL_CFLAGS) -o $@ $< -L$(OUT)/workloads -lwork -Wl,-rpath,'$$ORIGIN' -pthread
# Calls lib_spin through its PLT stub.
$(OUT)/workloads/edges: tests/workloads/edges.c $(OUT)/workloads/libwork.so
	$(CC) $(WL_CFLAGS) -o $@ $< -L$(OUT)/workloads -lwork -Wl,-rpath,'$$ORIGIN'
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
# Go, for source lines from .gopclntab (GO119 and GO_NEW above).
$(OUT)/workloads/gowork: tests/workloads/gowork.go
	@mkdir -p $(@D)
	GO111MODULE=off GOCACHE=$(abspath $(OUT))/go-cache $(GO119) build -o $@ $<
$(OUT)/workloads/gowork-go-new: tests/workloads/gowork.go
	@mkdir -p $(@D)
	GO111MODULE=off GOCACHE=$(abspath $(OUT))/go-cache $(GO_NEW) build -o $@ $<
# USDT probes of its own (<sys/sdt.h>: systemtap-sdt-dev).
# Exports its fake serviceability tables from .dynsym, as libjvm.so does.
$(OUT)/workloads/fakejvm: tests/workloads/fakejvm.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -rdynamic -o $@ $<
# Exports fake V8 postmortem metadata from .dynsym, as node does.
$(OUT)/workloads/fakev8: tests/workloads/fakev8.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -rdynamic -o $@ $<
# The same constants in a library a program dlopens once running
# (tests/workloads/fakev8.c).
$(OUT)/workloads/libfakev8.so: tests/workloads/fakev8.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -DFAKEV8_LIB -fPIC -shared -o $@ $<
$(OUT)/workloads/fakev8late: tests/workloads/fakev8.c $(OUT)/workloads/libfakev8.so
	$(CC) $(WL_CFLAGS) -DFAKEV8_LATE -o $@ $< -ldl
$(OUT)/workloads/usdtwork: tests/workloads/usdtwork.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
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
# --heap's (tests/integration/test_heap.sh): glibc's malloc, -O1 as the rest.
$(OUT)/workloads/heapsplit: tests/workloads/heapsplit.c
	@mkdir -p $(@D)
	$(CC) $(WL_CFLAGS) -o $@ $<
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
