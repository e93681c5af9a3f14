# evictd — one entry point: make, make run, make test, make vmtest, make bench.
ARCH ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BUILD ?= build
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
PKGS := libbpf yaml-0.1 json-c libsystemd libmicrohttpd libcurl

# Only ask pkg-config once the dependencies are there (the deps stamp installs them).
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lelf -lz -lm

WARN := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -D_GNU_SOURCE $(WARN) -Iuser -Ibpf -I$(BUILD)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Wall -Werror

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

# Every module but the entry points goes into one library the tests link against.
MAIN_SRCS := user/main.c user/evictctl.c
LIB_SRCS := $(filter-out $(MAIN_SRCS),$(wildcard user/*.c))
LIB_OBJS := $(patsubst user/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
SAN_OBJS := $(patsubst user/%.c,$(BUILD)/san/%.o,$(LIB_SRCS))
HDRS := $(wildcard user/*.h) bpf/evictd.h

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
UNIT_SAN_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests-san/%,$(UNIT_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
BPF_TEST_SRCS := $(wildcard tests/bpf/test_*.c)
BPF_TEST_BINS := $(patsubst tests/bpf/%.c,$(BUILD)/tests-bpf/%,$(BPF_TEST_SRCS))

DEPS_STAMP := $(BUILD)/.deps-$(shell cat tools/install-deps.sh | cksum | cut -d' ' -f1)

.PHONY: all deps run test unit fuzz bpftest clitest vmtest bench clean vmlinux
.DELETE_ON_ERROR:
# Keep the BPF objects and skeletons make builds on the way.
.SECONDARY: $(BPF_OBJS) $(SKELS)

all: $(BUILD)/evictd $(BUILD)/evictctl

$(DEPS_STAMP):
	@tools/install-deps.sh build test
	@mkdir -p $(BUILD) && rm -f $(BUILD)/.deps-* && touch $@
deps: $(DEPS_STAMP)

vmlinux:
	tools/gen-vmlinux.sh

$(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/evictd.h vmlinux/$(ARCH)/vmlinux.h | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

$(BUILD)/obj/%.o: user/%.c $(HDRS) $(SKELS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(BUILD)/san/%.o: user/%.c $(HDRS) $(SKELS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -c $< -o $@

$(BUILD)/libevictd.a: $(LIB_OBJS)
	$(AR) rcs $@ $^
$(BUILD)/libevictd-san.a: $(SAN_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/evictd: user/main.c $(BUILD)/libevictd.a $(HDRS)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $< $(BUILD)/libevictd.a $(PKG_LIBS) -o $@

$(BUILD)/evictctl: user/evictctl.c $(BUILD)/libevictd.a $(HDRS)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $< $(BUILD)/libevictd.a $(PKG_LIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c tests/unit/testutil.h $(BUILD)/libevictd.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Itests/unit $< $(BUILD)/libevictd.a $(PKG_LIBS) -lcmocka -o $@
$(BUILD)/tests-san/%: tests/unit/%.c tests/unit/testutil.h $(BUILD)/libevictd-san.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) -Itests/unit $< $(BUILD)/libevictd-san.a $(PKG_LIBS) -lcmocka -o $@

$(BUILD)/tests-bpf/%: tests/bpf/%.c $(BUILD)/libevictd.a $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Itests/unit $< $(BUILD)/libevictd.a $(PKG_LIBS) -lcmocka -o $@

# libFuzzer wants the code under test built by clang with coverage instrumentation.
FUZZ_FLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -Iuser -Ibpf -I$(BUILD) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB_SRCS) $(HDRS) $(SKELS)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_FLAGS) $(PKG_CFLAGS) $< $(LIB_SRCS) $(PKG_LIBS) -o $@

run: $(BUILD)/evictd $(BUILD)/evictctl
	$(BUILD)/evictd --dry-run $(ARGS)

unit: $(UNIT_BINS) $(UNIT_SAN_BINS)
fuzz: $(FUZZ_BINS)
bpftest: $(BPF_TEST_BINS)

# Runs every suite, prints a TAP stream per suite and "N passed, N failed" at the end.
test: $(BUILD)/evictd $(BUILD)/evictctl unit fuzz bpftest
	@tools/install-deps.sh vm
	@tests/run-all.sh $(TESTS)

vmtest: $(BUILD)/evictd
	@tools/install-deps.sh vm
	@tests/vm/run.sh

bench: $(BUILD)/evictd
	@tools/install-deps.sh vm bench
	@tools/bench/run.sh

clean:
	rm -rf $(BUILD)
