# mk/cluster.mk — the Redis Cluster tests (tests/cluster): clusters of
# 3 masters + 3 replicas made by scripts/cluster.sh on free 127.0.0.1 ports
# in temporary directories, torn down when each test ends.
#
#   make test-cluster        routing, hash tags, replica reads, resharding,
#                            failover, kill -9 durability, sizing, and a
#                            2-minute mixed workload under maxmemory (~4 min;
#                            part of `make test`)
#   make test-cluster-long   the mixed workload for CLUSTER_LONG_SECONDS
#                            (default 900) with another seed (SEED=n)
#
# pytest gets SIGINT at the time limit, so fixtures still stop the servers.

CLUSTER_PYTEST = timeout -s INT -k 60
CLUSTER_LONG_SECONDS ?= 900
SEED ?= 2

.PHONY: test-cluster test-cluster-long
test-cluster: $(BUILD)/seen.so
	$(CLUSTER_PYTEST) 900 $(PYTHON_SYSTEM) -m pytest -q -rP -p no:cacheprovider tests/cluster

test-cluster-long: $(BUILD)/seen.so
	SEEN_CLUSTER_WORKLOAD_SECONDS=$(CLUSTER_LONG_SECONDS) SEEN_CLUSTER_SEED=$(SEED) \
		$(CLUSTER_PYTEST) $$(($(CLUSTER_LONG_SECONDS) + 900)) $(PYTHON_SYSTEM) -m pytest -q -rP \
		-p no:cacheprovider tests/cluster/test_workload.py

EXTRA_TESTS += test-cluster
