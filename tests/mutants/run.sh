#!/bin/bash
# run.sh — `make test-mutants`: every mutant of tests/mutants/mutants.txt
# must make the unit tests or the fuzz corpora's replays fail.
#
# Each mutant gets a copy of src/ and include/ under build/mutants/N with
# one guard replaced, the library built from it (as the Makefile builds it,
# and again with SEEN_EF_MIN_RUN=64 as the replays use it), and runs
# test_set, test_raw_keys and test_format and the replays of the ops and
# batch corpora.  Two mutants build and run at a time (MUTANT_JOBS; the 16
# take ~14 minutes on a 2-core VM).  Exit status 1 if a mutant passes
# everything, or if the code no longer holds a mutant's text.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
list="$root/tests/mutants/mutants.txt"
work="$root/build/mutants"
jobs=${MUTANT_JOBS:-2}
CFLAGS_LIB="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -w"
rm -rf "$work"
mkdir -p "$work"

one() { # one N: build and test mutant N (its line of mutants.txt in $work/mN)
    local n=$1 d="$work/$1"
    local f occ old new what
    IFS=$'\t' read -r f occ old new what <"$work/m$n"
    mkdir -p "$d/lib" "$d/lib-ef"
    cp -r "$root/src" "$root/include" "$d/"
    if ! python3 "$root/tests/mutants/apply.py" "$d/src/core/$f" "$occ" "$old" "$new"; then
        echo "$n	STALE	$f: $what"
        return
    fi
    for c in "$d"/src/core/*.c; do
        cc $CFLAGS_LIB -O2 -I"$d/include" -I"$d/src/core" -c "$c" -o "$d/lib/$(basename "$c" .c).o" &&
            cc $CFLAGS_LIB -O1 -DSEEN_EF_MIN_RUN=64u -I"$d/include" -I"$d/src/core" -c "$c" \
                -o "$d/lib-ef/$(basename "$c" .c).o" || { echo "$n	NO-BUILD	$f: $what"; return; }
    done
    ar rcs "$d/libseen.a" "$d"/lib/*.o
    ar rcs "$d/libseen-ef.a" "$d"/lib-ef/*.o
    local inc="-I$d/include -I$d/src/core -I$root/tests/unit"
    for t in test_set test_raw_keys test_format; do
        cc $CFLAGS_LIB -O2 $inc "$root/tests/unit/$t.c" "$root/tests/unit/testutil.c" "$d/libseen.a" \
            -lcmocka -lm -o "$d/$t" || { echo "$n	NO-BUILD	$f: $what"; return; }
        # In a subshell, so a test killed by a signal (an assert's abort)
        # is reported in its log, not on the terminal.
        if ! (timeout 600 "$d/$t" >"$d/$t.log" 2>&1) 2>>"$d/$t.log"; then
            echo "$n	caught by $t	$f: $what"
            rm -rf "$d"
            return
        fi
    done
    for t in ops batch; do
        cc $CFLAGS_LIB -O1 -DSEEN_EF_MIN_RUN=64u $inc "$root/tests/fuzz/fuzz_$t.c" \
            "$root/tests/fuzz/replay.c" "$root/tests/unit/testutil.c" "$d/libseen-ef.a" -lm \
            -o "$d/replay_$t" || { echo "$n	NO-BUILD	$f: $what"; return; }
        if ! (timeout 900 "$d/replay_$t" "$root/tests/fuzz/corpus/$t" >"$d/replay_$t.log" 2>&1) \
            2>>"$d/replay_$t.log"; then
            echo "$n	caught by replay_$t	$f: $what"
            rm -rf "$d"
            return
        fi
    done
    echo "$n	SURVIVED	$f: $what"
}
export -f one
export root work CFLAGS_LIB

n=0
while IFS= read -r line; do
    case "$line" in '#'* | '') continue ;; esac
    n=$((n + 1))
    printf '%s\n' "$line" >"$work/m$n"
done <"$list"
echo "$n mutants, $jobs at a time"
seq 1 "$n" | xargs -P "$jobs" -I{} bash -c 'one {}' | tee "$work/results.txt"
bad=$(grep -cE $'\t(SURVIVED|STALE|NO-BUILD)\t' "$work/results.txt")
if [ "$bad" -gt 0 ]; then
    echo "test-mutants: $bad of $n mutants were not caught (see above; logs under $work)"
    exit 1
fi
echo "test-mutants: all $n mutants caught"
