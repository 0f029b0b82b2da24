# ebpfprof: BPF programs (clang, CO-RE) embedded through a bpftool skeleton
# into one userspace binary linked against Debian's libbpf, libelf and zlib.
#   make            build ./ebpfprof
#   make deps       install every Debian package the build and tests need (root)
#   make test       unit tests (cmocka) then integration tests (pytest, root)
#   make bench      overhead benchmarks (root)

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
INCLUDES   := -I$(OUTPUT) -Iinclude -Iuser
LDLIBS     := -lbpf -lelf -lz -ljansson -lm
BPF_CFLAGS := -g -O2 -Wall $(WERROR_FLAG) -target bpf -D__TARGET_ARCH_$(ARCH) \
              -I$(OUTPUT) -Iinclude -I/usr/include/$(MULTIARCH)

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
USER_SRCS  := $(wildcard user/*.c)
USER_OBJS  := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(USER_SRCS))
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
# unit tests link the modules they use from an archive of everything but main
LIB        := $(OUTPUT)/libebpfprof.a
PYTHON     ?= /usr/bin/python3

.PHONY: all deps demo test unit unit-bins integration bench vmtest clean
# a recipe that fails leaves no half-written target behind for the next make
.DELETE_ON_ERROR:
all: ebpfprof

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/user $(OUTPUT)/tests:
	mkdir -p $@

# CO-RE: types come from the running kernel's BTF; relocations adapt the
# programs to whichever kernel loads them.
$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) include/ebpfprof.h $(OUTPUT)/vmlinux.h | $(OUTPUT)/bpf
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# One object from one .bpf.c per concern; the maps they share are linked.
$(OUTPUT)/ebpfprof.bpf.o: $(BPF_OBJS)
	$(BPFTOOL) gen object $@ $^

$(OUTPUT)/ebpfprof.skel.h: $(OUTPUT)/ebpfprof.bpf.o
	$(BPFTOOL) gen skeleton $< name ebpfprof_bpf > $@.tmp && mv $@.tmp $@

$(OUTPUT)/user/session.o: $(OUTPUT)/ebpfprof.skel.h

$(OUTPUT)/user/%.o: user/%.c $(wildcard user/*.h) include/ebpfprof.h | $(OUTPUT)/user
	$(CC) $(CFLAGS) $(INCLUDES) -c $< -o $@

ebpfprof: $(USER_OBJS)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(LIB): $(filter-out $(OUTPUT)/user/main.o,$(USER_OBJS))
	$(AR) rcs $@ $^

$(OUTPUT)/tests/test_%: tests/unit/test_%.c $(LIB) | $(OUTPUT)/tests
	$(CC) $(CFLAGS) $(INCLUDES) -Itests/unit $< $(LIB) $(LDLIBS) -lcmocka -o $@

deps:
	scripts/deps.sh

# a C program embedding libpython3.11.so, profiled by the integration tests
include tests/embed/Makefile.inc

unit-bins: $(UNIT_BINS)

unit: $(UNIT_BINS)
	scripts/run-unit-tests.sh $(UNIT_BINS)

# real processes under the real BPF programs, then the same under 6.1 and 6.12 in QEMU
integration: ebpfprof
	$(PYTHON) -m pytest -ra -p no:cacheprovider tests/integration vmtests

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

vmtest: ebpfprof
	vmtests/run.sh

clean:
	rm -rf $(OUTPUT) ebpfprof
