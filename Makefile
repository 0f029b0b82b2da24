# ebpfprof: BPF programs (clang, CO-RE) embedded through a bpftool skeleton
# into one userspace binary linked against Debian's libbpf, libelf and zlib.
#   make            build ./ebpfprof
#   make deps       install every Debian package the build and tests need (root)
#   make test       unit tests (cmocka) then integration tests (pytest, root)
#   make bench      overhead benchmarks (root)
#   make soak       10-minute memory test of a long recording (root)
#   make fuzz       each fuzz target for 10 minutes under ASan/UBSan
#   make check-asan the unit tests under ASan/UBSan
#   make install    binary and man page under $(DESTDIR)$(PREFIX) (PREFIX=/usr/local)
#   make install-caps  file capabilities on the installed binary, for one group
#   make container  the container image (Containerfile) with podman

VERSION    ?= 0.1.0
OUTPUT     := build
CLANG      ?= clang
BPFTOOL    ?= bpftool
CC         ?= cc
ARCH       := $(shell uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
MULTIARCH  := $(shell $(CC) -dumpmachine)
# Warnings: -Wall -Wextra everywhere. A parameter a fixed signature imposes but
# the function does not need (a writer callback, cmocka's state, a placeholder
# subcommand) is marked with (void)name; -Wunused-parameter stays on so that a
# parameter forgotten by mistake still shows. snprintf truncation is not warned
# about: messages and paths are cut to their buffers on purpose.
# WERROR=1 turns warnings into errors; CI (CI=true) sets it, users need not.
WERROR     ?= $(if $(filter true,$(CI)),1,0)
WERROR_FLAG := $(if $(filter 1,$(WERROR)),-Werror)
CFLAGS     ?= -O2 -g
CFLAGS     += -Wall -Wextra -Wno-format-truncation $(WERROR_FLAG) -std=gnu11 -DEP_VERSION='"$(VERSION)"'
# user/ in layers, lowest first: each folder includes its own headers and
# those of the folders before it (scripts/check-layers.sh holds it to that)
USER_DIRS  := base cpython native model output diff history push record live cli
INCLUDES   := -I$(OUTPUT) -Iinclude $(patsubst %,-Iuser/%,$(USER_DIRS))
LDLIBS     := -lbpf -ldw -lelf -llzma -lz -ljansson -lsqlite3 -lcurl -lpthread -lm
# BPF_EXTRA: e.g. -DEP_BENCH_NO_GIL, a piece of the switch program left out
# to time it (bench/switch_pieces.py, docs/benchmarks.md); never for use
BPF_CFLAGS := -g -O2 -Wall $(WERROR_FLAG) -target bpf -D__TARGET_ARCH_$(ARCH) $(BPF_EXTRA) \
              -I$(OUTPUT) -Iinclude -I/usr/include/$(MULTIARCH)

# gc.bpf.c first: it defines the shared maps (see there), and bpftool 7.1's
# skeleton finds a map's relocation only when their object leads the link;
# sorted, so offcpu.bpf.c, which defines the off-CPU maps, leads offcpu_*.bpf.c
BPF_SRCS   := bpf/gc.bpf.c $(filter-out bpf/gc.bpf.c,$(sort $(wildcard bpf/*.bpf.c)))
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
USER_SRCS  := $(wildcard $(patsubst %,user/%/*.c,$(USER_DIRS)))
USER_HDRS  := $(wildcard user/*/*.h)
# the headers the kernel side and userspace share (include/ep_states.h: the states)
SHARED_HDRS := $(wildcard include/*.h)
USER_OBJS  := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
# unit tests link the modules they use from an archive of everything but main
LIB        := $(OUTPUT)/libebpfprof.a
PYTHON     ?= /usr/bin/python3

.PHONY: all deps demo test unit unit-bins integration bench soak vmtest clean check-asan fuzz fuzz-short fuzz-bins \
        install uninstall install-caps container
# a recipe that fails leaves no half-written target behind for the next make
.DELETE_ON_ERROR:
all: ebpfprof

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/tests:
	mkdir -p $@

# CO-RE: types come from the running kernel's BTF; relocations adapt the
# programs to whichever kernel loads them.
$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(SHARED_HDRS) $(OUTPUT)/vmlinux.h | $(OUTPUT)/bpf
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# One object from one .bpf.c per concern; the maps they share are linked.
$(OUTPUT)/ebpfprof.bpf.o: $(BPF_OBJS)
	$(BPFTOOL) gen object $@ $^

$(OUTPUT)/ebpfprof.skel.h: $(OUTPUT)/ebpfprof.bpf.o
	$(BPFTOOL) gen skeleton $< name ebpfprof_bpf > $@.tmp && mv $@.tmp $@

$(patsubst user/%.c,$(OUTPUT)/user/%.o,$(wildcard user/record/session*.c)): $(OUTPUT)/ebpfprof.skel.h

$(OUTPUT)/user/%.o: user/%.c $(USER_HDRS) $(SHARED_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@

ebpfprof: $(USER_OBJS)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(LIB): $(filter-out $(OUTPUT)/user/cli/main.o,$(USER_OBJS))
	$(AR) rcs $@ $^

$(OUTPUT)/tests/test_%: tests/unit/test_%.c $(LIB) | $(OUTPUT)/tests
	$(CC) $(CFLAGS) $(INCLUDES) -Itests/unit $< $(LIB) $(LDLIBS) -lcmocka -o $@

deps:
	scripts/deps.sh

# The unit tests again, built with AddressSanitizer and UBSan: a read or write
# out of bounds, a use after free, an overflow or a bad shift fails the test.
ASAN_OUT    := $(OUTPUT)/asan
ASAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
ASAN_OBJS   := $(patsubst user/%.c,$(ASAN_OUT)/user/%.o,$(filter-out user/cli/main.c,$(USER_SRCS)))
ASAN_BINS   := $(patsubst tests/unit/%.c,$(ASAN_OUT)/tests/%,$(UNIT_SRCS))

$(patsubst user/%.c,$(ASAN_OUT)/user/%.o,$(wildcard user/record/session*.c)): $(OUTPUT)/ebpfprof.skel.h

$(ASAN_OUT)/user/%.o: user/%.c $(USER_HDRS) $(SHARED_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(ASAN_CFLAGS) $(INCLUDES) -c $< -o $@

$(ASAN_OUT)/libebpfprof.a: $(ASAN_OBJS)
	$(AR) rcs $@ $^

$(ASAN_OUT)/tests/test_%: tests/unit/test_%.c $(ASAN_OUT)/libebpfprof.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(ASAN_CFLAGS) $(INCLUDES) -Itests/unit $< $(ASAN_OUT)/libebpfprof.a $(LDLIBS) -lcmocka -o $@

# libFuzzer targets (clang, ASan, UBSan) of everything that parses what the
# target controls. make test runs each for FUZZ_SHORT seconds; make fuzz for
# FUZZ_SECONDS (FUZZ_JOBS at a time). Corpora are kept in build/fuzz/corpus-*.
FUZZ_OUT     := $(OUTPUT)/fuzz
FUZZ_CC      ?= clang-14
FUZZ_CFLAGS  := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_NAMES   := linetable elf debug_offsets pystr json recording native native_proto push_labels labels
FUZZ_BINS    := $(patsubst %,$(FUZZ_OUT)/fuzz_%,$(FUZZ_NAMES))
FUZZ_SECONDS ?= 600
FUZZ_SHORT   ?= 10
FUZZ_JOBS    ?= 2
fuzz_linetable_SRCS     := user/cpython/py_linetable.c
fuzz_elf_SRCS           := user/base/elf_syms.c
fuzz_elf_LIBS           := -lelf
fuzz_debug_offsets_SRCS := user/cpython/py_debug_offsets.c user/cpython/py_layout_table.c user/base/remote.c \
			   user/base/remote_reader.c user/base/procfs.c user/base/line_read.c user/base/clock.c \
			   user/base/grow.c
fuzz_pystr_SRCS         := user/cpython/py_str.c user/base/utf8.c
fuzz_json_SRCS          := user/base/json.c user/base/printable.c user/base/utf8.c
fuzz_recording_SRCS     := user/diff/diff_read.c user/diff/diff_model.c user/diff/diff_report.c user/diff/diff_flame.c \
			   user/diff/diff_folded.c user/model/profile.c user/model/task_spans.c user/model/sample_log.c user/base/grow.c \
			   user/model/states.c user/base/json.c user/base/printable.c user/base/utf8.c \
			   user/base/hash_index.c
fuzz_recording_LIBS     := -ljansson -lm
fuzz_native_SRCS        := user/native/native_dwfl.c user/native/native_proto.c user/native/eh_frame_hdr.c \
			   user/native/xz_bound.c user/base/mapped_file.c user/base/grow.c user/base/clock.c
fuzz_native_LIBS        := -ldw -lelf -llzma
fuzz_native_proto_SRCS  := user/native/native_proto.c
fuzz_labels_SRCS        := user/model/labels.c user/model/label_series.c user/model/dask_key.c user/base/grow.c \
			   user/base/hash_index.c
fuzz_push_labels_SRCS   := user/push/push_labels.c

.SECONDEXPANSION:
$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $$(fuzz_%_SRCS) $(USER_HDRS) $(SHARED_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(INCLUDES) -Itests/unit $< $(fuzz_$*_SRCS) $(fuzz_$*_LIBS) -o $@

fuzz-bins: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_BINS)

fuzz-short: $(FUZZ_BINS)
	scripts/fuzz.sh $(FUZZ_SHORT) $(FUZZ_JOBS) $(FUZZ_BINS)

check-asan: $(ASAN_BINS)
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		scripts/run-unit-tests.sh $(ASAN_BINS)

# a C program embedding libpython3.11.so, profiled by the integration tests
include tests/embed/Makefile.inc

unit-bins: $(UNIT_BINS)

unit: $(UNIT_BINS)
	scripts/run-unit-tests.sh $(UNIT_BINS)

# real processes under the real BPF programs (hostile targets and native frames
# first: their profiles join the speedscope app check that ends tests/integration),
# then the smoke test under 5.10, 6.1 and 6.12 in QEMU
# The soaks (the documented growth: <= 10 MiB an hour; --rotate's RSS flat
# over 30 periods) are memory targets, so benchmarks: make soak, which make
# bench runs; the suite keeps the per-switch growth tests (test_memory.py),
# which fail the same leaks in 12-20 s, and --rotate's periods (12 s).
integration: ebpfprof
	$(PYTHON) -m pytest -ra --durations=30 -p no:cacheprovider --junitxml=build/test-times.xml \
		--deselect tests/integration/test_memory.py::test_soak \
		--deselect tests/integration/test_rotate.py::test_rotate_soak \
		tests/hostile tests/native tests/integration vmtests

# the README's first command: set up, build, profile the bundled demo
demo: deps
	$(MAKE) ebpfprof
	./ebpfprof --idle --gc-log demo-gc.jsonl -o demo.speedscope.json -- $(PYTHON) examples/demo.py
	@echo "demo: open $(CURDIR)/demo.speedscope.json at https://www.speedscope.app (GC pauses and long waits: $(CURDIR)/demo-gc.jsonl)"

# deps, build, unit tests, integration tests: what CI runs (.ci/run)
test:
	scripts/test.sh

bench: ebpfprof
	scripts/bench.sh

# a 10-minute recording of a switch-heavy target: memory must not grow with it;
# a minute of --rotate 2: the profiler's RSS stays flat over 30 periods
soak: ebpfprof
	EBPFPROF_SOAK=1 EBPFPROF_SOAK_SECONDS=600 $(PYTHON) -m pytest -ra -s -p no:cacheprovider \
		tests/integration/test_memory.py tests/integration/test_rotate.py -k soak

vmtest: ebpfprof
	vmtests/run.sh

PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
INSTALL    ?= install
# install-caps: the group whose members may run the capable binary, and the
# capabilities it gets (sampling, the BPF maps and programs, reading the
# target's memory; see ebpfprof(1), PRIVILEGES, for CAP_SYS_ADMIN and GC timing)
CAPS_GROUP ?= ebpfprof
CAPS       ?= cap_bpf,cap_perfmon,cap_sys_ptrace
IMAGE      ?= localhost/ebpfprof:$(VERSION)

install: ebpfprof
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 0755 ebpfprof $(DESTDIR)$(BINDIR)/ebpfprof
	$(INSTALL) -m 0644 docs/ebpfprof.1 $(DESTDIR)$(MANDIR)/man1/ebpfprof.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ebpfprof $(DESTDIR)$(MANDIR)/man1/ebpfprof.1

# Anyone in CAPS_GROUP can then profile any process of the machine: the
# capabilities are those of root for reading memory and tracing. Root only.
install-caps: install
	getent group $(CAPS_GROUP) >/dev/null || groupadd --system $(CAPS_GROUP)
	chgrp $(CAPS_GROUP) $(DESTDIR)$(BINDIR)/ebpfprof
	chmod 0750 $(DESTDIR)$(BINDIR)/ebpfprof
	setcap $(CAPS)=ep $(DESTDIR)$(BINDIR)/ebpfprof
	@echo "install-caps: $(DESTDIR)$(BINDIR)/ebpfprof runs with $(CAPS) for members of group $(CAPS_GROUP)"

# the image of the Containerfile; without a registry the base image is made
# locally from a debootstrapped bookworm (scripts/container-base.sh)
container:
	scripts/container-base.sh
	podman build $(PODMAN_BUILD_FLAGS) --build-arg VERSION=$(VERSION) -t $(IMAGE) -f Containerfile .

clean:
	rm -rf $(OUTPUT) ebpfprof
