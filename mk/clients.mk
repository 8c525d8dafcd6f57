# mk/clients.mk — the client libraries' own test suites.
#
#   make test-client-node   clients/node: npm ci (from the npm registry, as
#                           package-lock.json pins), then its tests against a
#                           real server and a 3-master cluster, and tsc on a
#                           typed use of its declarations (part of `make test`)
#
# The Python client (clients/python) is tested by the module and cluster
# suites (tests/module/test_client_python.py, tests/cluster/test_client_python.py).

.PHONY: test-client-node
test-client-node: $(BUILD)/seen.so
	cd clients/node && npm ci --no-audit --no-fund --loglevel=error
	cd clients/node && timeout -k 30 600 npm test

EXTRA_TESTS += test-client-node
