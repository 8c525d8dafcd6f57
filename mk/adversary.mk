# ------------------------------------------------------------ adversary
# Random workloads of every shape a key can be put through (pages, batches
# of up to 300,000, imports in any time order over several windows,
# deletes, compactions, reloads, restarts from RDB and AOF) against a
# redis-server whose clock runs 20,000 times fast, each answer checked
# against an exact model and each value against a replica's
# (tests/adversary/adversary.py).  Part of
# `make test`: test-adversary, six seeds of 150 steps (~35 s), and
# test-adversary-san, two more seeds with the module under ASan+UBSan
# (~15 s).  A longer hunt:
#   make test-adversary ADVERSARY_ARGS='--seeds 1,2,3,4,5,6,7,8 --steps 1000 --max-seconds 600'
.PHONY: test-adversary test-adversary-san

ADVERSARY_ARGS ?= --seeds 1,2,3,4,5,6 --steps 150
ADVERSARY_SAN_ARGS ?= --seeds 7,8 --steps 120

test-adversary: $(BUILD)/seen.so $(BUILD)/bench/libfastclock.so
	timeout -k 30 900 $(PYTHON_SYSTEM) tests/adversary/adversary.py $(ADVERSARY_ARGS)

test-adversary-san: $(SAN)/seen.so $(BUILD)/bench/libfastclock.so
	REDIS_PRELOAD="$$($(CC) -print-file-name=libasan.so)" \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 timeout -k 30 900 \
		$(PYTHON_SYSTEM) tests/adversary/adversary.py --module $(SAN)/seen.so $(ADVERSARY_SAN_ARGS)

EXTRA_TESTS += test-adversary test-adversary-san
