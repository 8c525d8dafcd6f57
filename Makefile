# Makefile — builds the core library, its tests, fuzz targets and
# benchmarks, the Redis module (build/seen.so) and the ingester.
#
#   make              library, module, ingester
#   make test         every test (see scripts/test.sh for the full run)
#   make bench-core   the core benchmark
#
# Objects go to build/ (optimised) and build/san/ (AddressSanitizer and
# UndefinedBehaviorSanitizer).

CC      ?= cc
CLANG   ?= clang
CSTD     = -std=c11
WARN     = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
DEFS     = -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
CFLAGS  ?= -O2 -g
ALL_CFLAGS = $(CSTD) $(WARN) $(DEFS) -fPIC -Iinclude -Isrc/core $(CFLAGS)
SAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDLIBS_CORE = -lm

BUILD = build
SAN   = build/san

CORE_SRC = $(wildcard src/core/*.c)
CORE_OBJ = $(CORE_SRC:src/core/%.c=$(BUILD)/core/%.o)
CORE_SAN_OBJ = $(CORE_SRC:src/core/%.c=$(SAN)/core/%.o)
CORE_HDR = include/seen.h $(wildcard src/core/*.h) src/common/size_class.h

.PHONY: all lib module clean test test-unit test-fuzz test-mutants test-module test-module-san fuzz \
	fuzz-corpus bench-core bench-alternatives format format-check
all: lib module

lib: $(BUILD)/libseen.a

$(BUILD)/core/%.o: src/core/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(SAN)/core/%.o: src/core/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -Iinclude -Isrc/core $(SAN_FLAGS) -c $< -o $@

$(BUILD)/libseen.a: $(CORE_OBJ)
	ar rcs $@ $^

$(SAN)/libseen.a: $(CORE_SAN_OBJ)
	ar rcs $@ $^

# The fuzz corpora replay against a sanitized core whose runs turn
# Elias-Fano from 64 values, so short programs exercise both layouts.
EF_SMALL = -DSEEN_EF_MIN_RUN=64u
CORE_SAN_EF_OBJ = $(CORE_SRC:src/core/%.c=$(SAN)/core-ef/%.o)

$(SAN)/core-ef/%.o: src/core/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) $(EF_SMALL) -Iinclude -Isrc/core $(SAN_FLAGS) -c $< -o $@

$(SAN)/libseen-ef.a: $(CORE_SAN_EF_OBJ)
	ar rcs $@ $^

# The Redis module: its objects see only our own module API declarations
# (src/module/rm_api.h), and the shared object exports RedisModule_OnLoad
# alone so the core's symbols cannot clash with another module's.
MODULE_SRC = $(wildcard src/module/*.c)
MODULE_OBJ = $(MODULE_SRC:src/module/%.c=$(BUILD)/module/%.o)
MODULE_HDR = include/seen.h $(wildcard src/module/*.h) $(wildcard src/common/*.h)

module: $(BUILD)/seen.so

$(BUILD)/module/%.o: src/module/%.c $(MODULE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Isrc/module -fvisibility=hidden -c $< -o $@

$(BUILD)/seen.so: $(MODULE_OBJ) $(BUILD)/libseen.a src/module/exports.map
	$(CC) -shared -o $@ $(MODULE_OBJ) $(BUILD)/libseen.a -Wl,--version-script=src/module/exports.map \
		-Wl,-z,defs $(LDLIBS_CORE) -lc

# The same module under AddressSanitizer and UBSan, for redis-server started
# with libasan preloaded.  Its core is built apart (position-independent, as
# a shared object needs) and keeps the C library's allocator, which ASan
# watches, instead of Redis's jemalloc, which it cannot see into.
MODULE_SAN_OBJ = $(MODULE_SRC:src/module/%.c=$(SAN)/module/%.o) \
                 $(CORE_SRC:src/core/%.c=$(SAN)/pic/%.o)

$(SAN)/module/%.o: src/module/%.c $(MODULE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -fPIC -Iinclude -Isrc/module $(SAN_FLAGS) \
		-DSEEN_MODULE_SYSTEM_ALLOC -fvisibility=hidden -c $< -o $@

$(SAN)/pic/%.o: src/core/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -fPIC -Iinclude -Isrc/core $(SAN_FLAGS) -c $< -o $@

$(SAN)/seen.so: $(MODULE_SAN_OBJ) src/module/exports.map
	$(CC) -shared $(SAN_FLAGS) -o $@ $(MODULE_SAN_OBJ) \
		-Wl,--version-script=src/module/exports.map $(LDLIBS_CORE)

# Integration tests: a real redis-server on a free loopback port.
PYTHON_SYSTEM ?= /usr/bin/python3
test-module: $(BUILD)/seen.so $(BUILD)/bench/libfastclock.so
	$(PYTHON_SYSTEM) -m pytest -q tests/module

# The same suite with the sanitized module (Redis's own leaks at exit are
# not ours to report).
test-module-san: $(SAN)/seen.so $(BUILD)/bench/libfastclock.so
	SEEN_MODULE=$(SAN)/seen.so REDIS_PRELOAD="$$($(CC) -print-file-name=libasan.so)" \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 $(PYTHON_SYSTEM) -m pytest -q tests/module

clean:
	rm -rf $(BUILD)

FORMATTED = $(wildcard include/*.h src/*/*.c src/*/*.h tests/*/*.c bench/*.c bench/*.h)

format:
	clang-format -i $(FORMATTED)

# Part of `make test`, so code that drifts from .clang-format fails CI.
format-check:
	clang-format --dry-run -Werror $(FORMATTED)

# ------------------------------------------------------------------ tests
# Unit tests link the library's internals (white-box tests of the codec).
TEST_CFLAGS = $(CSTD) -Wall -Wextra -Werror $(DEFS) -Iinclude -Isrc/core -Itests/unit
TEST_COMMON = tests/unit/testutil.c tests/unit/testutil.h
UNIT_TESTS = test_run test_set test_format test_raw_keys test_loader
# What every unit test links: the shared helpers and FORMAT.md's reader.
UNIT_LINK = tests/unit/testutil.c tests/unit/spec_walk.c
UNIT_DEPS = $(TEST_COMMON) tests/unit/spec_walk.c tests/unit/spec_walk.h

$(BUILD)/tests/%: tests/unit/%.c $(UNIT_DEPS) $(BUILD)/libseen.a
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -O2 -g $< $(UNIT_LINK) $(BUILD)/libseen.a -lcmocka -lm -o $@

$(SAN)/tests/%: tests/unit/%.c $(UNIT_DEPS) $(SAN)/libseen.a
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(SAN_FLAGS) $< $(UNIT_LINK) $(SAN)/libseen.a -lcmocka -lm -o $@

# Fuzz targets, replayed without libFuzzer by tests/fuzz/replay.c.
FUZZ_TARGETS = load ops batch

$(SAN)/fuzz/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(TEST_COMMON) $(SAN)/libseen-ef.a
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(EF_SMALL) $(SAN_FLAGS) $< tests/fuzz/replay.c tests/unit/testutil.c \
		$(SAN)/libseen-ef.a -lm -o $@

# libFuzzer builds (clang): checksums are fixed up so mutations reach the
# deep checks (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION).
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(TEST_COMMON) $(CORE_SRC) $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CLANG) $(TEST_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION $(EF_SMALL) $< tests/unit/testutil.c $(CORE_SRC) \
		-lm -o $@

$(BUILD)/tests/make_corpus: tests/fuzz/make_corpus.c $(TEST_COMMON) $(BUILD)/libseen.a
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -O1 -g $< tests/unit/testutil.c $(BUILD)/libseen.a -lm -o $@

test-unit: $(UNIT_TESTS:%=$(BUILD)/tests/%) $(UNIT_TESTS:%=$(SAN)/tests/%)
	@for t in $(UNIT_TESTS); do echo "== $$t"; $(BUILD)/tests/$$t || exit 1; done
	@for t in $(UNIT_TESTS); do echo "== $$t (ASan+UBSan)"; $(SAN)/tests/$$t || exit 1; done

test-fuzz: $(FUZZ_TARGETS:%=$(SAN)/fuzz/replay_%)
	@for t in $(FUZZ_TARGETS); do echo "== replay corpus of fuzz_$$t (ASan+UBSan)"; \
		$(SAN)/fuzz/replay_$$t tests/fuzz/corpus/$$t || exit 1; done

# Each guard listed in tests/mutants/mutants.txt broken in turn: the unit
# tests, the fuzz replays or (for the module's) the module tests must fail
# on every one (tests/mutants/run.sh; not part of `make test`).
test-mutants: $(BUILD)/seen.so $(BUILD)/bench/libfastclock.so
	PYTHON_SYSTEM=$(PYTHON_SYSTEM) bash tests/mutants/run.sh

# Fuzz for FUZZ_SECONDS per target; new inputs go to build/fuzz/new_*, copy
# the interesting ones into tests/fuzz/corpus/.
FUZZ_SECONDS ?= 60
fuzz: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
	@for t in $(FUZZ_TARGETS); do mkdir -p $(BUILD)/fuzz/new_$$t; \
		$(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
		$(BUILD)/fuzz/new_$$t tests/fuzz/corpus/$$t || exit 1; done

fuzz-corpus: $(BUILD)/tests/make_corpus
	$(BUILD)/tests/make_corpus tests/fuzz/corpus

# Other parts of the project (ingester, benchmarks, cluster) bring their
# rules in mk/*.mk and add their CI test targets to EXTRA_TESTS.
EXTRA_TESTS =
-include $(sort $(wildcard mk/*.mk))

test: format-check test-unit test-fuzz test-module test-module-san $(EXTRA_TESTS)

# --------------------------------------------------------------- benchmarks
$(BUILD)/bench/bench_core: bench/bench_core.c bench/hset.h bench/bench_util.h $(BUILD)/libseen.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) -Wall -Wextra -Werror $(DEFS) -O2 -g -Iinclude $< $(BUILD)/libseen.a -lm -o $@

bench-core: $(BUILD)/bench/bench_core
	$(BUILD)/bench/bench_core

$(BUILD)/bench/alternatives: bench/alternatives.c bench/bench_util.h $(BUILD)/libseen.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) -Wall -Wextra -Werror $(DEFS) -O2 -g -Iinclude $< $(BUILD)/libseen.a -lm -o $@

# Sizes of the encodings seen could have used, for docs/DESIGN.md.
bench-alternatives: $(BUILD)/bench/alternatives
	$(BUILD)/bench/alternatives
