#!/usr/bin/env bash
# build-redisbloom.sh SRC [OUT] — build a RedisBloom module for the BF
# columns of `make bench`, from a RedisBloom 2.2.x source tree (the last
# series that keeps all its sources in the tree: later ones need git
# submodules and their own build system).  Nothing of RedisBloom is kept in
# this repository (its licence is not ours); get the sources yourself, e.g.
# `git clone -b v2.2.18 https://github.com/RedisBloom/RedisBloom SRC` or a
# release tarball, then:
#
#   bench/build-redisbloom.sh SRC build/redisbloom.so
#   REDISBLOOM_MODULE=build/redisbloom.so make bench
#
# 2.2.x predates -fno-common being GCC's default, hence -fcommon.
set -euo pipefail
src="${1:?usage: $0 REDISBLOOM_SRC [OUT]}"
out="${2:-build/redisbloom.so}"
[ -f "$src/src/rebloom.c" ] && [ -f "$src/src/redismodule.h" ] && [ -f "$src/contrib/bloom.c" ] || {
  echo "$src does not look like a RedisBloom 2.2.x tree (src/rebloom.c, src/redismodule.h, contrib/bloom.c)" >&2
  exit 1
}
mkdir -p "$(dirname "$out")"
cc -O2 -fPIC -shared -fcommon -std=gnu99 -w -I"$src" -I"$src/src" -I"$src/contrib" -I"$src/rmutil" \
  "$src/src/rebloom.c" "$src/contrib/MurmurHash2.c" "$src/rmutil/util.c" "$src/src/sb.c" "$src/src/cf.c" \
  "$src/src/rm_topk.c" "$src/src/topk.c" "$src/src/rm_cms.c" "$src/src/cms.c" -o "$out" -lm -lc
echo "built $out"
