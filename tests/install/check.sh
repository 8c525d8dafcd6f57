#!/usr/bin/env bash
# check.sh ROOT — what `make install` put under ROOT (a staged PREFIX) is
# usable as documented: a program built with `pkg-config --cflags --libs
# seen` alone links and runs against libseen, the module is a loadable
# Redis module, the ingester runs.  PKG_CONFIG_PATH and
# PKG_CONFIG_SYSROOT_DIR point pkg-config at the staged seen.pc.
set -euo pipefail
root="${1:?usage: check.sh STAGED_PREFIX}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

flags="$(pkg-config --cflags --libs seen)"
echo "pkg-config --cflags --libs seen: $flags"
cat > "$work/use.c" <<'C'
#include <seen.h>
#include <stdio.h>

int main(void)
{
    seen_policy policy;
    seen_policy_default(&policy);
    seen_set *set;
    if (seen_create(&policy, &set) != SEEN_OK)
        return 1;
    seen_str items[2] = {{"v1", 2}, {"v2", 2}};
    size_t added = 0;
    int64_t now = 1700000000000;
    if (seen_add_str(set, items, 1, NULL, now, &added) != SEEN_OK || added != 1)
        return 2;
    unsigned char seen[2] = {0, 0};
    if (seen_filter_str(set, items, 2, now, seen) != SEEN_OK)
        return 3;
    printf("%d%d %s\n", seen[0], seen[1], SEEN_VERSION_STRING);
    seen_free(set);
    return 0;
}
C
# shellcheck disable=SC2086 # pkg-config's output is a list of flags
cc -std=c11 -Wall -Werror "$work/use.c" -o "$work/use" $flags
out="$("$work/use")"
[ "$out" = "10 $(pkg-config --modversion seen)" ] || { echo "unexpected output: $out" >&2; exit 1; }

nm -D --defined-only "$root/lib/redis/modules/seen.so" | grep -q ' RedisModule_OnLoad$' ||
  { echo "seen.so does not export RedisModule_OnLoad" >&2; exit 1; }
"$root/bin/seen-ingest" --help >/dev/null
echo "install check: ok ($root)"
