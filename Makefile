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
CORE_HDR = include/seen.h $(wildcard src/core/*.h)

.PHONY: all lib module clean test test-unit test-module bench-core format
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

# The Redis module: its objects see only our own module API declarations
# (src/module/rm_api.h), and the shared object exports RedisModule_OnLoad
# alone so the core's symbols cannot clash with another module's.
MODULE_SRC = $(wildcard src/module/*.c)
MODULE_OBJ = $(MODULE_SRC:src/module/%.c=$(BUILD)/module/%.o)
MODULE_HDR = include/seen.h $(wildcard src/module/*.h)

module: $(BUILD)/seen.so

$(BUILD)/module/%.o: src/module/%.c $(MODULE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Isrc/module -fvisibility=hidden -c $< -o $@

$(BUILD)/seen.so: $(MODULE_OBJ) $(BUILD)/libseen.a src/module/exports.map
	$(CC) -shared -o $@ $(MODULE_OBJ) $(BUILD)/libseen.a -Wl,--version-script=src/module/exports.map \
		-Wl,-z,defs $(LDLIBS_CORE) -lc

# Integration tests: a real redis-server on a free loopback port.
PYTHON_SYSTEM ?= /usr/bin/python3
test-module: $(BUILD)/seen.so
	$(PYTHON_SYSTEM) -m pytest -q tests/module

clean:
	rm -rf $(BUILD)

format:
	clang-format -i include/*.h src/*/*.c src/*/*.h tests/*/*.c bench/*.c
