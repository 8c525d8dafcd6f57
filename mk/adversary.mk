# ------------------------------------------------------------ adversary
# Random workloads of every shape a key can be put through (pages, batches
# of up to 300,000, imports in any time order over several windows,
# deletes, compactions, reloads, restarts from RDB and AOF) against a
# redis-server whose clock runs 20,000 times fast, each answer checked
# against an exact model (tests/adversary/adversary.py).  test-adversary:
# six seeds of 150 steps (~40 s), part of `make test`.  A longer hunt:
#   make test-adversary ADVERSARY_ARGS='--seeds 1,2,3,4,5,6,7,8 --steps 1000 --max-seconds 600'
.PHONY: test-adversary

ADVERSARY_ARGS ?= --seeds 1,2,3,4,5,6 --steps 150

test-adversary: $(BUILD)/seen.so $(BUILD)/bench/libfastclock.so
	timeout -k 30 900 $(PYTHON_SYSTEM) tests/adversary/adversary.py $(ADVERSARY_ARGS)

EXTRA_TESTS += test-adversary
