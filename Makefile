# petal-tui — build, test, bench, install.
#
#   make run        install missing Debian packages, build, open the workbench on demo data
#   make test       install missing Debian packages, build, run every test
#   make            build build/petal-tui
#   make bench      run the benchmarks in bench/ (figures go to bench/RESULTS.md by hand)
#   make install    PREFIX=/usr/local DESTDIR=
#   make SAN=1 test run the tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make valgrind   run the tests under valgrind memcheck
#   make conformance  ONNX Runtime on petal-tui's exports (tests/test_ort.c: node and
#                   onnxruntime-node, installed by ort-deps), then full-width torchvision
#                   nets against PyTorch (needs /usr/bin/python3 with torch, torchvision
#                   and onnx); each says so and skips when what it needs is missing
#   make fuzz FUZZ_SECONDS=N  run each libFuzzer harness (tests/fuzz/) N seconds (default 60),
#                   one after the other, on a scratch copy of its corpus in build-fuzz/, and
#                   print execs, exec/s, coverage and crashes per target (clang, ASan+UBSan);
#                   `make test` builds them too and runs each for a couple of seconds
#   make fuzz-seeds rewrite the seed corpora in tests/fuzz/corpus/ with the project's writers
#
# Every library comes from the system through pkg-config.

VERSION   := 0.1.0
PREFIX    ?= /usr/local
DESTDIR   ?=
BUILD     ?= build
CC        ?= cc
PKG_CONFIG ?= pkg-config
PROTOC_C  ?= protoc-c

# The libraries and the Debian package that provides each (pc-name:package).
LIBS      := ncursesw libturbojpeg libsixel openblas libprotobuf-c libpng zlib ompi-c
DEB_LIBS  := ncursesw:libncurses-dev libturbojpeg:libturbojpeg0-dev libsixel:libsixel-dev \
             openblas:libopenblas-dev libprotobuf-c:libprotobuf-c-dev libpng:libpng-dev \
             zlib:zlib1g-dev ompi-c:libopenmpi-dev
# Programs the build or the tests run (program:package).
DEB_TOOLS := pkg-config:pkg-config protoc-c:protobuf-c-compiler protoc:protobuf-compiler tmux:tmux \
             strace:strace clang:clang mpirun:openmpi-bin \
             node:nodejs npm:npm
# Packages with no program or pkg-config file to look for (checked with dpkg-query):
# libFuzzer's runtime, which clang does not pull in on Debian 12; python3-onnx, whose
# checker the export tests run on every file petal-tui writes (with /usr/bin/python3).
DEB_PKGS  := libclang-rt-14-dev python3-onnx

V         ?= 0
ifeq ($(V),0)
  Q := @
else
  Q :=
endif

OPT       ?= -O2
DEBUG     ?= -g
WARN      := -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
STD       := -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L
ifeq ($(SAN),1)
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  # override: a BUILD=x on the command line still gets its own x-san folder
  override BUILD := $(BUILD)-san
endif

# Recursive (=) on purpose: pkg-config runs when a recipe needs the flags,
# which is after `make deps` has installed what was missing.
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(LIBS) 2>/dev/null)
PKG_LIBS   = $(shell $(PKG_CONFIG) --libs $(LIBS) 2>/dev/null)
CPPFLAGS_ALL = -I. -Icore -I$(BUILD)/gen $(PKG_CFLAGS) -DPT_VERSION=\"$(VERSION)\"
CFLAGS_ALL   = $(STD) $(OPT) $(DEBUG) $(WARN) -pthread $(SANFLAGS) $(CFLAGS)
LDFLAGS_ALL  = -pthread $(SANFLAGS) $(LDFLAGS)
LDLIBS_ALL   = $(PKG_LIBS) -lm $(LDLIBS)

CORE_SRC  := $(sort $(wildcard core/*.c core/*/*.c))
UI_SRC    := $(sort $(wildcard ui/*.c))
APP_SRC   := $(sort $(wildcard src/*.c))
TEST_SRC  := $(sort $(wildcard tests/*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))

GEN_SRC   := $(BUILD)/gen/example.pb-c.c $(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/event.pb-c.c \
             $(BUILD)/gen/classes104.c $(BUILD)/gen/demo_params.c $(BUILD)/gen/imagenet1000.c
GEN_HDR   := $(BUILD)/gen/example.pb-c.h $(BUILD)/gen/onnx.pb-c.h $(BUILD)/gen/event.pb-c.h

CORE_OBJ  := $(CORE_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/example.pb-c.o $(BUILD)/gen/onnx.pb-c.o \
             $(BUILD)/gen/event.pb-c.o \
             $(BUILD)/gen/classes104.o $(BUILD)/gen/demo_params.o $(BUILD)/gen/imagenet1000.o
UI_OBJ    := $(UI_SRC:%.c=$(BUILD)/%.o)
APP_OBJ   := $(APP_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o) $(BUILD)/tests/list.o
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

CORE_LIB  := $(BUILD)/libpetalcore.a
UI_LIB    := $(BUILD)/libpetalui.a
BIN       := $(BUILD)/petal-tui
TEST_BIN  := $(BUILD)/tests/run-tests

.PHONY: FORCE all run test check build-tests bench valgrind conformance deps ort-deps install \
        uninstall clean fuzz fuzz-build fuzz-bins fuzz-seeds
.DEFAULT_GOAL := all

all: $(BIN)

# --- the two commands of the README -------------------------------------------------
run: deps
	@$(MAKE) --no-print-directory all
	$(BIN)

test: deps ort-deps
	@$(MAKE) --no-print-directory build-tests
	PT_BIN=$(BIN) PT_FUZZ_BIN=$(FUZZ_BUILD)/fuzz $(TEST_BIN) $(TESTFLAGS)

check: test

# The fuzz harnesses are built too where clang can link a libFuzzer program; where it
# cannot (deps could not install clang), the fuzz tests skip and say why.
build-tests: $(BIN) $(TEST_BIN)
	@if $(FUZZ_PROBE); then $(MAKE) --no-print-directory fuzz-build; \
	 else echo "fuzz: $(FUZZ_CC) cannot link a libFuzzer program; the fuzz harnesses are" \
	           "not built (make deps installs clang and libclang-rt-14-dev)"; fi

# Installs only what is missing; uses sudo when not root. Idempotent and quiet when
# everything is present.
deps:
	@missing=""; \
	command -v $(PKG_CONFIG) >/dev/null 2>&1 || missing="$$missing pkg-config"; \
	for pair in $(DEB_LIBS); do \
	  pc=$${pair%%:*}; pkg=$${pair#*:}; \
	  $(PKG_CONFIG) --exists $$pc 2>/dev/null || missing="$$missing $$pkg"; \
	done; \
	for pair in $(DEB_TOOLS); do \
	  prog=$${pair%%:*}; pkg=$${pair#*:}; \
	  command -v $$prog >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	if command -v dpkg-query >/dev/null 2>&1; then \
	  for pkg in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q 'ok installed' || \
	      missing="$$missing $$pkg"; \
	  done; \
	fi; \
	if [ -n "$$missing" ]; then \
	  echo "petal-tui: installing missing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# --- generated sources ---------------------------------------------------------------
$(BUILD)/gen/example.pb-c.c $(BUILD)/gen/example.pb-c.h: core/io/example.proto
	@mkdir -p $(BUILD)/gen
	@echo "  PROTOC  $<"
	$(Q)$(PROTOC_C) --proto_path=core/io --c_out=$(BUILD)/gen core/io/example.proto

# The subset of ONNX's onnx.proto that the ONNX reader (core/io/onnx.c) needs.
$(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/onnx.pb-c.h: core/io/onnx.proto
	@mkdir -p $(BUILD)/gen
	@echo "  PROTOC  $<"
	$(Q)$(PROTOC_C) --proto_path=core/io --c_out=$(BUILD)/gen core/io/onnx.proto

# The subset of TensorFlow's event.proto / summary.proto / tensor.proto that the
# TensorBoard event files (core/io/tbevent.c) need.
$(BUILD)/gen/event.pb-c.c $(BUILD)/gen/event.pb-c.h: core/io/event.proto
	@mkdir -p $(BUILD)/gen
	@echo "  PROTOC  $<"
	$(Q)$(PROTOC_C) --proto_path=core/io --c_out=$(BUILD)/gen core/io/event.proto

# Class names, one per line in assets/, compiled in as C arrays so the binary needs
# no data files: the competition's 104 flowers, and the 1,000 ImageNet classes in
# index order (what pretrained backbones predict).
$(BUILD)/gen/classes104.c: assets/classes-104.txt Makefile
$(BUILD)/gen/classes104.c: NAMES := ds_competition_classes
$(BUILD)/gen/classes104.c: COUNT := ds_competition_class_count
$(BUILD)/gen/imagenet1000.c: assets/imagenet-classes.txt Makefile
$(BUILD)/gen/imagenet1000.c: NAMES := ds_imagenet_classes
$(BUILD)/gen/imagenet1000.c: COUNT := ds_imagenet_class_count
$(BUILD)/gen/classes104.c $(BUILD)/gen/imagenet1000.c:
	@mkdir -p $(BUILD)/gen
	@{ echo '/* generated from $< */'; \
	   echo '#include <stddef.h>'; \
	   echo 'const char *const $(NAMES)[] = {'; \
	   sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/",/' $<; \
	   echo '};'; \
	   echo 'const size_t $(COUNT) = sizeof $(NAMES) / sizeof $(NAMES)[0];'; \
	 } > $@

# The demo dataset's parameters, compiled in as text.
$(BUILD)/gen/demo_params.c: assets/demo-dataset.conf Makefile
	@mkdir -p $(BUILD)/gen
	@{ echo '/* generated from assets/demo-dataset.conf */'; \
	   echo 'const char demo_params_text[] ='; \
	   sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $<; \
	   echo ';'; } > $@

# Test registry: every `TEST(name)` in tests/*.c, in file order.
# The list of test files, rewritten only when a file comes or goes, so that deleting
# a test file regenerates list.c (a plain dependency on $(TEST_SRC) misses deletions).
$(BUILD)/tests/sources: FORCE
	@mkdir -p $(BUILD)/tests
	@echo '$(TEST_SRC)' | cmp -s - $@ || echo '$(TEST_SRC)' > $@

$(BUILD)/tests/list.c: $(TEST_SRC) $(BUILD)/tests/sources Makefile
	@mkdir -p $(BUILD)/tests
	@{ echo '/* generated from the TEST() lines in tests/ */'; echo '#include "tests/t.h"'; \
	   grep -ho '^TEST([A-Za-z0-9_]*)' $(TEST_SRC) | sed 's/^TEST(\(.*\))/void t_\1(void);/'; \
	   echo 'const struct t_case t_cases[] = {'; \
	   for f in $(TEST_SRC); do \
	     grep -ho '^TEST([A-Za-z0-9_]*)' $$f | sed "s|^TEST(\(.*\))|    { \"\1\", \"$$f\", t_\1 },|"; \
	   done; \
	   echo '    { 0, 0, 0 }'; echo '};'; } > $@

# --- compile -------------------------------------------------------------------------
# The layer kernels: GCC vectorises their channel loops only at -O3, and without
# trapping math it may if-convert the ReLU masks (only FP exception flags differ,
# which nothing reads). Same flags under clang.
NN_OPT ?= -O3 -fno-trapping-math
$(BUILD)/core/nn/%.o: OPT := $(NN_OPT)

$(BUILD)/%.o: %.c $(GEN_HDR)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c $(GEN_HDR)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/tests/list.o: $(BUILD)/tests/list.c
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -Wno-missing-prototypes -c $< -o $@

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	$(Q)ar rcs $@ $^

$(UI_LIB): $(UI_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	$(Q)ar rcs $@ $^

$(BIN): $(APP_OBJ) $(UI_LIB) $(CORE_LIB)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(APP_OBJ) $(UI_LIB) $(CORE_LIB) $(LDLIBS_ALL)

$(TEST_BIN): $(TEST_OBJ) $(UI_LIB) $(CORE_LIB)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(TEST_OBJ) $(UI_LIB) $(CORE_LIB) $(LDLIBS_ALL)

$(BUILD)/bench/%: bench/%.c $(CORE_LIB) $(GEN_HDR)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(CORE_LIB) $(LDLIBS_ALL)

# --- benchmarks, valgrind ------------------------------------------------------------
bench: deps
	@$(MAKE) --no-print-directory $(BIN) $(BENCH_BIN)
	@BUILD=$(BUILD) sh bench/run.sh

valgrind:
	@$(MAKE) --no-print-directory deps DEB_TOOLS="$(DEB_TOOLS) valgrind:valgrind"
	@$(MAKE) --no-print-directory build-tests
	PT_BIN=$(BIN) PT_VALGRIND=1 valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
	  --track-fds=no $(TEST_BIN) $(TESTFLAGS)

# --- ONNX Runtime, the independent check of `petal-tui export` ------------------------
# tests/ort/ holds a package.json pinning onnxruntime-node (its CPU library is in the
# package), jpeg-js (predict_folder.js, the README's script), ort_run.js and
# predict_folder.js; `npm ci --ignore-scripts` installs them into tests/ort/
# node_modules (the install script only fetches GPU parts). Without node, npm or the
# registry the ONNX Runtime tests skip, are counted, and say why.
ORT_DIR := tests/ort

ort-deps:
	@if [ -f $(ORT_DIR)/node_modules/onnxruntime-node/package.json ] && \
	    [ -f $(ORT_DIR)/node_modules/jpeg-js/package.json ]; then :; \
	 elif command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then \
	   echo "petal-tui: installing onnxruntime-node into $(ORT_DIR)/node_modules (npm ci)"; \
	   (cd $(ORT_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || \
	   echo "petal-tui: npm could not install onnxruntime-node: the ONNX Runtime tests skip"; \
	 else echo "petal-tui: no node/npm: the ONNX Runtime tests skip"; fi

# --- conformance with PyTorch ----------------------------------------------------------
# tests/data/conform/make_conform.py exports the five families at full width (224 px)
# with PyTorch's logits and gradients into build/conformance (about 1.3 GB, VGG-11's
# classifier most of it; made again when the script changes), then conform-check
# compares petal-tui with them (tolerances in tests/conform.h). The narrow copies of
# the same nets are committed and checked by `make test`.
TORCH_PYTHON ?= /usr/bin/python3
CONFORM_DIR  := $(BUILD)/conformance
CONFORM_BIN  := $(BUILD)/tests/conform-check

$(CONFORM_BIN): tests/conform/check.c $(BUILD)/tests/conform.o $(CORE_LIB) $(GEN_HDR)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< \
	  $(BUILD)/tests/conform.o $(CORE_LIB) $(LDLIBS_ALL)

$(CONFORM_DIR)/made: tests/data/conform/make_conform.py
	@rm -f $@
	$(TORCH_PYTHON) tests/data/conform/make_conform.py --full $(CONFORM_DIR)
	@touch $@

# The ONNX Runtime part: the tests named onnxruntime_* (tests/test_ort.c), which train
# tiny runs, export them, and check predict against ONNX Runtime on the same pixels.
conformance: deps ort-deps
	@$(MAKE) -s --no-print-directory $(BIN) $(TEST_BIN) $(CONFORM_BIN)
	PT_BIN=$(BIN) $(TEST_BIN) onnxruntime
	@if $(TORCH_PYTHON) -c 'import torch, torchvision, onnx' >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(CONFORM_DIR)/made && $(CONFORM_BIN) $(CONFORM_DIR); \
	else \
	  echo "conformance: skipped: $(TORCH_PYTHON) cannot import torch, torchvision and onnx" \
	       "(Debian 12: apt-get install python3-torch python3-torchvision python3-onnx)"; \
	fi

# --- fuzzing (issue 13) ----------------------------------------------------------------
# One libFuzzer harness per parser of outside bytes: tests/fuzz/fuzz_TARGET.c, with its
# seeds in tests/fuzz/corpus/TARGET/, an optional dictionary tests/fuzz/TARGET.dict and
# the inputs of crashes found and fixed in tests/fuzz/regress/TARGET/ (run first, every
# time). core/ and ui/ are compiled again with clang, ASan and UBSan into build-fuzz/
# (a BUILD of its own: build/ and build-san/ are left alone); only the harness's link
# adds libFuzzer's main. `make fuzz` fuzzes a scratch copy of each corpus
# (build-fuzz/corpus/TARGET, kept between runs) and never writes into tests/.
FUZZ_BUILD   := build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := $(sort $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SAN     := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
                -fno-sanitize-recover=undefined
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz/fuzz_%)
# Succeeds when $(FUZZ_CC) links a libFuzzer program with the sanitizers.
FUZZ_PROBE    = printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' | \
                $(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1

fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) SAN=0 CC=$(FUZZ_CC) OPT=-O1 \
	  NN_OPT='-O2 -fno-trapping-math' SANFLAGS='$(FUZZ_SAN)' fuzz-bins

fuzz-bins:
ifneq ($(BUILD),$(FUZZ_BUILD))
	$(error fuzz-bins is made through fuzz-build)
endif
fuzz-bins: $(FUZZ_BINS)

$(FUZZ_BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(UI_LIB) $(CORE_LIB) $(GEN_HDR)
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -fsanitize=fuzzer -MMD -MP -o $@ $< \
	  $(UI_LIB) $(CORE_LIB) $(LDLIBS_ALL)

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@sh tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The seeds are real files written by the project's own writers (tests/fuzz/make_seeds.c).
FUZZ_SEEDS_BIN := $(BUILD)/tests/fuzz-seeds
$(FUZZ_SEEDS_BIN): tests/fuzz/make_seeds.c $(CORE_LIB) $(GEN_HDR)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(CORE_LIB) $(LDLIBS_ALL)

fuzz-seeds: $(FUZZ_SEEDS_BIN)
	$(FUZZ_SEEDS_BIN) tests/fuzz/corpus

# --- install -------------------------------------------------------------------------
install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/petal-tui
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/petal-tui
	install -m 644 man/petal-tui.1 $(DESTDIR)$(PREFIX)/share/man/man1/petal-tui.1
	install -m 644 assets/classes-104.txt assets/config.example $(DESTDIR)$(PREFIX)/share/petal-tui/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/petal-tui $(DESTDIR)$(PREFIX)/share/man/man1/petal-tui.1
	rm -rf $(DESTDIR)$(PREFIX)/share/petal-tui

clean:
	rm -rf build build-san build-*

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
FORCE:
