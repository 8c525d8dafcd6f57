# mk/bench.mk — the side-by-side Redis benchmark (bench/bench_redis.c).
#
#   make bench        full run (< 6 min): bench/results/latest.md, PNG plots and
#                     latency.md (make bench-latency alone: the slowest commands)
#   make test-bench   smoke test (a few seconds): the program runs end to end
#                     and writes a well-formed report; part of `make test`
#
# REDISBLOOM_MODULE=/path/to/redisbloom.so adds the BF columns.

BENCH_SRC = bench/bench_redis.c bench/bench_report.c bench/driver.c
BENCH_OUT ?= bench/results

.PHONY: bench bench-latency test-bench bench-layouts test-layouts bench-states test-states \
	test-states-san bench-young

# It links the core library to time the core alone on a twin of a key.
$(BUILD)/bench/bench_redis: $(BENCH_SRC) bench/driver.h bench/bench_redis.h include/seen.h $(BUILD)/libseen.a
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -O2 -g -Iinclude $(BENCH_SRC) $(BUILD)/libseen.a -lhiredis -lm -o $@

bench: $(BUILD)/seen.so $(BUILD)/bench/bench_redis $(BUILD)/bench/bench_latency
	$(BUILD)/bench/bench_redis --out $(BENCH_OUT) --command "make bench"
	gnuplot -e "dir='$(BENCH_OUT)'" bench/plot.gp
	$(BUILD)/bench/bench_latency --out $(BENCH_OUT)

# How long the largest command of each kind holds the server (latency.md).
$(BUILD)/bench/bench_latency: bench/bench_latency.c bench/driver.c bench/driver.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -O2 -g -Iinclude bench/bench_latency.c bench/driver.c -lhiredis -lm -o $@

bench-latency: $(BUILD)/seen.so $(BUILD)/bench/bench_latency
	$(BUILD)/bench/bench_latency --out $(BENCH_OUT)

test-bench: $(BUILD)/seen.so $(BUILD)/bench/bench_redis
	@rm -rf $(BUILD)/bench-smoke
	$(BUILD)/bench/bench_redis --quick --out $(BUILD)/bench-smoke --command "make test-bench"
	bash bench/check_report.sh $(BUILD)/bench-smoke

EXTRA_TESTS += test-bench

# ------------------------------------------------------------ lifecycle
# A fleet's memory over 200 simulated days: a redis-server whose wall clock
# runs fast (libfastclock.so, LD_PRELOAD), SEEN keys beside SETs and trimmed
# ZSETs (bench/lifecycle.py; bench/results/lifecycle.md and .png).
# test-lifecycle is its 60-day short form (~40 s), part of `make test`: it
# fails on a false negative, and reports the memory targets.
.PHONY: bench-lifecycle test-lifecycle

$(BUILD)/bench/libfastclock.so: bench/fastclock.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) -Wall -Wextra -Werror -O2 -fPIC -shared $< -o $@

bench-lifecycle: $(BUILD)/seen.so $(BUILD)/bench/libfastclock.so
	$(PYTHON_SYSTEM) bench/lifecycle.py --out $(BENCH_OUT)

test-lifecycle: $(BUILD)/seen.so $(BUILD)/bench/libfastclock.so
	@rm -rf $(BUILD)/lifecycle-smoke
	timeout -k 30 300 $(PYTHON_SYSTEM) bench/lifecycle.py --short --check \
		--out $(BUILD)/lifecycle-smoke --command "make test-lifecycle"
	@grep -q '^| 60 |' $(BUILD)/lifecycle-smoke/lifecycle.md

EXTRA_TESTS += test-lifecycle

# ------------------------------------------------------------ layouts
# The library's batch query beside an Elias-Fano run prototype, for
# docs/DESIGN.md.  POPCNT where the compiler offers it (x86-64 servers have
# had it since 2008); the prototype's lookups count bits with it.
POPCNT_FLAG := $(shell $(CC) -mpopcnt -E -x c /dev/null >/dev/null 2>&1 && echo -mpopcnt)

$(BUILD)/bench/layouts: bench/layouts.c bench/bench_util.h $(BUILD)/libseen.a $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -O2 -g $(POPCNT_FLAG) -Iinclude -Isrc/core $< \
		$(BUILD)/libseen.a -lm -o $@

bench-layouts: $(BUILD)/bench/layouts
	$(BUILD)/bench/layouts

# Part of `make test`: one small size, whose run checks that both layouts
# find every seen candidate and agree with each other.
test-layouts: $(BUILD)/bench/layouts
	$(BUILD)/bench/layouts 1000 > /dev/null
EXTRA_TESTS += test-layouts

# ------------------------------------------------------------ states
# Keys driven through users' rate patterns (growing, waves, a late page, a
# return after months away) in 4, 16 and 64 slices, in process: runs and
# bits per live item over 250 days, writes refused, batch queries beside
# a hash set of the live items, and the time of every page of adds
# (bench/states.c; bench/results/states.md, about 75 s).
$(BUILD)/bench/states: bench/states.c bench/hset.h bench/bench_util.h $(BUILD)/libseen.a include/seen.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -O2 -g -Iinclude $< $(BUILD)/libseen.a -lm -o $@

bench-states: $(BUILD)/bench/states
	$(BUILD)/bench/states $(BENCH_OUT)/states.md

# A heavy key's first day in 17 page sizes and first days of 30,000 to
# 320,000 items, in process, the key sized as the module holds it
# (bench/young_pages.c; bench/results/young_pages.md, about 10 s).
$(BUILD)/bench/young_pages: bench/young_pages.c src/common/size_class.h $(BUILD)/libseen.a include/seen.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -O2 -g -Iinclude $< $(BUILD)/libseen.a -lm -o $@

bench-young: $(BUILD)/bench/young_pages
	$(BUILD)/bench/young_pages $(BENCH_OUT)/young_pages.md

# Its short form (120 days, 4 and 64 slices; ~10 s), part of `make test`:
# fails on a refused write, a live item reported unseen, false positives
# past the bound or a state the loader refuses, in any state.
# test-states-san runs it against the library under ASan+UBSan (~30 s).
$(SAN)/bench/states: bench/states.c bench/hset.h bench/bench_util.h $(SAN)/libseen.a include/seen.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) $(SAN_FLAGS) -Iinclude $< $(SAN)/libseen.a -lm -o $@

test-states: $(BUILD)/bench/states
	@mkdir -p $(BUILD)/states-smoke
	$(BUILD)/bench/states --short $(BUILD)/states-smoke/states.md

test-states-san: $(SAN)/bench/states
	@mkdir -p $(SAN)/states-smoke
	$(SAN)/bench/states --short $(SAN)/states-smoke/states.md
EXTRA_TESTS += test-states test-states-san
