# mk/ingest.mk — seen-ingest (src/ingest/), its tests and its benchmark.
#
#   make build/seen-ingest   the ingester
#   make test-ingest         tests against real redis-server processes and
#                            librdkafka's mock cluster (tests/ingest/)
#   make bench-ingest        batched SEEN.ADD vs one ZADD per event

INGEST_SRC = $(wildcard src/ingest/*.c)
INGEST_HDR = $(wildcard src/ingest/*.h) $(wildcard src/common/*.h)
INGEST_OBJ = $(INGEST_SRC:src/ingest/%.c=$(BUILD)/ingest/%.o)
INGEST_SAN_OBJ = $(INGEST_SRC:src/ingest/%.c=$(SAN)/ingest/%.o)
# Everything but main(), for the benchmark and test programs.
INGEST_LIB_OBJ = $(filter-out $(BUILD)/ingest/main.o,$(INGEST_OBJ))
INGEST_LIBS = -lrdkafka -lhiredis -ljansson -lm

.PHONY: ingest test-ingest bench-ingest
all: ingest
ingest: $(BUILD)/seen-ingest

$(BUILD)/ingest/%.o: src/ingest/%.c $(INGEST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -Isrc/ingest $(CFLAGS) -c $< -o $@

$(SAN)/ingest/%.o: src/ingest/%.c $(INGEST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -Isrc/ingest $(SAN_FLAGS) -c $< -o $@

$(BUILD)/seen-ingest: $(INGEST_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(INGEST_LIBS)

# The tests run the sanitized build: a memory error or undefined behaviour
# anywhere on the tested paths aborts the ingester and fails its test.
$(SAN)/seen-ingest: $(INGEST_SAN_OBJ)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(INGEST_LIBS)

# A mock Kafka cluster in a process of its own, so the ingester can be
# killed and restarted against the same brokers, offsets and messages.
$(BUILD)/tests/kafka_mock: tests/ingest/kafka_mock.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -O2 -g $< -lrdkafka -o $@

# Unit tests of the ingester's pure parts (templates, events, slots, batch plans).
$(BUILD)/tests/test_ingest_unit: tests/ingest/test_unit.c $(INGEST_SAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -Isrc/ingest $(SAN_FLAGS) $< \
		$(filter-out $(SAN)/ingest/main.o,$(INGEST_SAN_OBJ)) $(INGEST_LIBS) -lcmocka -o $@

test-ingest: $(SAN)/seen-ingest $(BUILD)/seen-ingest $(BUILD)/seen.so $(BUILD)/tests/kafka_mock \
		$(BUILD)/tests/test_ingest_unit
	$(BUILD)/tests/test_ingest_unit
	SEEN_INGEST=$(SAN)/seen-ingest ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
		$(PYTHON_SYSTEM) -m pytest -q tests/ingest

EXTRA_TESTS += test-ingest

$(BUILD)/bench/bench_ingest: bench/bench_ingest.c $(INGEST_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(DEFS) -Isrc/ingest -O2 -g $< $(INGEST_LIB_OBJ) $(INGEST_LIBS) -o $@

BENCH_INGEST_ARGS ?=
bench-ingest: $(BUILD)/bench/bench_ingest $(BUILD)/seen.so
	$(BUILD)/bench/bench_ingest --module $(BUILD)/seen.so $(BENCH_INGEST_ARGS)
