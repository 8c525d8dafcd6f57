#!/bin/bash
# run.sh — `make test-mutants`: every mutant of tests/mutants/mutants.txt
# must make the unit tests or the fuzz corpora's replays fail.
#
# The library's objects and the tests' are built once under
# build/mutants/base (as the Makefile builds them, again with
# SEEN_EF_MIN_RUN=64 as the replays use them, and under ASan+UBSan).  Each
# mutant then gets a
# copy of src/core under build/mutants/N with one guard replaced, the file
# it changes built alone and linked with the other objects (a header:
# every file rebuilt), and runs, fastest first and stopping at the first
# that fails: test_loader, test_format, test_raw_keys, test_set, test_run,
# the replays of the load, ops and batch corpora, and test_loader and
# test_format under ASan+UBSan.  A mutant of the module (its file named
# module/…) gets a copy of src/module instead: the file it changes is built
# alone and linked with the module's other objects and the library as
# `make` built them (build/), and the module tests run against that
# seen.so (SEEN_MODULE), the ones that feed it stored and uploaded bytes
# first, then the whole suite.  Two mutants run at a time (MUTANT_JOBS).
# Exit status 1 if a mutant passes everything, or if the code no longer
# holds a mutant's text.  MUTANTS_LIST names another list in the same form
# (a sweep for new guards).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
list=${MUTANTS_LIST:-$root/tests/mutants/mutants.txt}
work="$root/build/mutants"
base="$work/base"
jobs=${MUTANT_JOBS:-2}
CFLAGS_LIB="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -w"
EF_SMALL="-DSEEN_EF_MIN_RUN=64u"
SAN="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
UNIT="test_loader test_format test_raw_keys test_set test_run"
REPLAYS="load ops batch"
# Last, for a mutant the rest let through: the loader's tests under
# ASan+UBSan (a check removed may let a forgery reach a read past a run's
# bytes, or a shift out of range, before a later check refuses it).
UNIT_SAN="test_loader test_format"
rm -rf "$work"
mkdir -p "$base/lib" "$base/lib-ef" "$base/lib-san" "$base/tests" "$base/tests-san"

# The unmutated objects, two files at a time.
build_base() {
    local inc="-I$root/include -I$root/src/core" tinc="-I$root/tests/unit"
    for c in "$root"/src/core/*.c; do
        local b
        b=$(basename "$c" .c)
        echo "cc $CFLAGS_LIB -O2 $inc -c $c -o $base/lib/$b.o"
        echo "cc $CFLAGS_LIB -O1 $EF_SMALL $inc -c $c -o $base/lib-ef/$b.o"
        echo "cc $CFLAGS_LIB $SAN $inc -c $c -o $base/lib-san/$b.o"
    done
    for t in $UNIT_SAN testutil spec_walk; do
        echo "cc $CFLAGS_LIB $SAN $inc $tinc -c $root/tests/unit/$t.c -o $base/tests-san/$t.o"
    done
    for t in $UNIT testutil spec_walk; do
        echo "cc $CFLAGS_LIB -O2 $inc $tinc -c $root/tests/unit/$t.c -o $base/tests/$t.o"
    done
    echo "cc $CFLAGS_LIB -O1 $EF_SMALL $inc $tinc -c $root/tests/unit/testutil.c -o $base/tests/testutil-ef.o"
    echo "cc $CFLAGS_LIB -O1 $EF_SMALL $inc $tinc -c $root/tests/fuzz/replay.c -o $base/tests/replay.o"
    for t in $REPLAYS; do
        echo "cc $CFLAGS_LIB -O1 $EF_SMALL $inc $tinc -c $root/tests/fuzz/fuzz_$t.c -o $base/tests/fuzz_$t.o"
    done
}
if ! build_base | xargs -P "$jobs" -I{} sh -c '{}'; then
    echo "test-mutants: the unmutated library does not build"
    exit 1
fi

# A module mutant: its seen.so, then the module tests against it.
MODULE_FLAGS="-std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -fPIC -O2 -fvisibility=hidden -w"
PYTHON_SYSTEM=${PYTHON_SYSTEM:-/usr/bin/python3}
MODULE_FIRST="test_restore.py test_limits.py test_commands.py test_persistence.py"
one_module() { # one_module N FILE OCC OLD NEW WHAT
    local n=$1 f=${2#module/} occ=$3 old=$4 new=$5 what=$6 d="$work/$1"
    mkdir -p "$d/src"
    cp -r "$root/src/module" "$root/src/common" "$d/src/"
    if ! python3 "$root/tests/mutants/apply.py" "$d/src/module/$f" "$occ" "$old" "$new"; then
        echo "$n	STALE	module/$f: $what"
        return
    fi
    local objs=() c b t
    for c in "$root"/src/module/*.c; do
        b=$(basename "$c" .c)
        if [ "$b.c" = "$f" ]; then
            cc $MODULE_FLAGS -I"$root/include" -I"$d/src/module" -c "$d/src/module/$b.c" \
                -o "$d/$b.o" || { echo "$n	NO-BUILD	module/$f: $what"; return; }
            objs+=("$d/$b.o")
        else
            objs+=("$root/build/module/$b.o")
        fi
    done
    cc -shared -o "$d/seen.so" "${objs[@]}" "$root/build/libseen.a" \
        -Wl,--version-script="$root/src/module/exports.map" -lm -lc ||
        { echo "$n	NO-BUILD	module/$f: $what"; return; }
    cd "$root" || return
    local first=()
    for t in $MODULE_FIRST; do first+=("tests/module/$t"); done
    if ! SEEN_MODULE="$d/seen.so" timeout 900 "$PYTHON_SYSTEM" -m pytest -q -x -p no:cacheprovider \
        "${first[@]}" >"$d/first.log" 2>&1; then
        echo "$n	caught by the module tests that load bytes	module/$f: $what"
        rm -rf "$d"
        return
    fi
    if ! SEEN_MODULE="$d/seen.so" timeout 1800 "$PYTHON_SYSTEM" -m pytest -q -x -p no:cacheprovider \
        tests/module >"$d/all.log" 2>&1; then
        echo "$n	caught by the module tests	module/$f: $what"
        rm -rf "$d"
        return
    fi
    echo "$n	SURVIVED	module/$f: $what"
}

one() { # one N: build and test mutant N (its line of mutants.txt in $work/mN)
    local n=$1 d="$work/$1"
    local f occ old new what
    IFS=$'\t' read -r f occ old new what <"$work/m$n"
    if [ "${f#module/}" != "$f" ]; then
        one_module "$n" "$f" "$occ" "$old" "$new" "$what"
        return
    fi
    mkdir -p "$d/src" "$d/lib" "$d/lib-ef"
    cp -r "$root/src/core" "$root/src/common" "$d/src/"
    if ! python3 "$root/tests/mutants/apply.py" "$d/src/core/$f" "$occ" "$old" "$new"; then
        echo "$n	STALE	$f: $what"
        return
    fi
    # A mutated .c file is built alone and linked with the unmutated
    # objects; a mutated header, with every file (any may include it).
    local inc="-I$root/include -I$d/src/core" lib=() lib_ef=() c b
    for c in "$root"/src/core/*.c; do
        b=$(basename "$c" .c)
        if [ "$b.c" = "$f" ] || [ "${f%.h}" != "$f" ]; then
            cc $CFLAGS_LIB -O2 $inc -c "$d/src/core/$b.c" -o "$d/lib/$b.o" &&
                cc $CFLAGS_LIB -O1 $EF_SMALL $inc -c "$d/src/core/$b.c" -o "$d/lib-ef/$b.o" ||
                { echo "$n	NO-BUILD	$f: $what"; return; }
            lib+=("$d/lib/$b.o")
            lib_ef+=("$d/lib-ef/$b.o")
        else
            lib+=("$base/lib/$b.o")
            lib_ef+=("$base/lib-ef/$b.o")
        fi
    done
    # The tests include the core's headers: a mutated one, theirs too.
    local tests="$base/tests"
    if [ "${f%.h}" != "$f" ]; then
        tests="$d/tests"
        mkdir -p "$tests"
        local tinc="$inc -I$root/tests/unit" t
        for t in $UNIT testutil spec_walk; do
            cc $CFLAGS_LIB -O2 $tinc -c "$root/tests/unit/$t.c" -o "$tests/$t.o" ||
                { echo "$n	NO-BUILD	$f: $what"; return; }
        done
        cc $CFLAGS_LIB -O1 $EF_SMALL $tinc -c "$root/tests/unit/testutil.c" -o "$tests/testutil-ef.o" &&
            cc $CFLAGS_LIB -O1 $EF_SMALL $tinc -c "$root/tests/fuzz/replay.c" -o "$tests/replay.o" ||
            { echo "$n	NO-BUILD	$f: $what"; return; }
        for t in $REPLAYS; do
            cc $CFLAGS_LIB -O1 $EF_SMALL $tinc -c "$root/tests/fuzz/fuzz_$t.c" -o "$tests/fuzz_$t.o" ||
                { echo "$n	NO-BUILD	$f: $what"; return; }
        done
    fi
    # Tests run from the checkout: some read the fuzz corpora by path.
    cd "$root" || return
    for t in $UNIT; do
        cc "$tests/$t.o" "$tests/testutil.o" "$tests/spec_walk.o" "${lib[@]}" -lcmocka -lm \
            -o "$d/$t" || { echo "$n	NO-BUILD	$f: $what"; return; }
        # In a subshell, so a test killed by a signal (an assert's abort)
        # is reported in its log, not on the terminal.
        if ! (timeout 600 "$d/$t" >"$d/$t.log" 2>&1) 2>>"$d/$t.log"; then
            echo "$n	caught by $t	$f: $what"
            rm -rf "$d"
            return
        fi
    done
    for t in $REPLAYS; do
        cc "$tests/fuzz_$t.o" "$tests/replay.o" "$tests/testutil-ef.o" \
            "${lib_ef[@]}" -lm -o "$d/replay_$t" ||
            { echo "$n	NO-BUILD	$f: $what"; return; }
        if ! (timeout 900 "$d/replay_$t" "$root/tests/fuzz/corpus/$t" >"$d/replay_$t.log" 2>&1) \
            2>>"$d/replay_$t.log"; then
            echo "$n	caught by replay_$t	$f: $what"
            rm -rf "$d"
            return
        fi
    done
    local lib_san=() tests_san="$base/tests-san"
    for c in "$root"/src/core/*.c; do
        b=$(basename "$c" .c)
        if [ "$b.c" = "$f" ] || [ "${f%.h}" != "$f" ]; then
            cc $CFLAGS_LIB $SAN $inc -c "$d/src/core/$b.c" -o "$d/lib/$b-san.o" ||
                { echo "$n	NO-BUILD	$f: $what"; return; }
            lib_san+=("$d/lib/$b-san.o")
        else
            lib_san+=("$base/lib-san/$b.o")
        fi
    done
    if [ "${f%.h}" != "$f" ]; then
        tests_san="$d/tests-san"
        mkdir -p "$tests_san"
        for t in $UNIT_SAN testutil spec_walk; do
            cc $CFLAGS_LIB $SAN $inc -I"$root/tests/unit" -c "$root/tests/unit/$t.c" \
                -o "$tests_san/$t.o" || { echo "$n	NO-BUILD	$f: $what"; return; }
        done
    fi
    for t in $UNIT_SAN; do
        cc -fsanitize=address,undefined "$tests_san/$t.o" "$tests_san/testutil.o" \
            "$tests_san/spec_walk.o" "${lib_san[@]}" -lcmocka -lm -o "$d/$t-san" ||
            { echo "$n	NO-BUILD	$f: $what"; return; }
        if ! (timeout 600 "$d/$t-san" >"$d/$t-san.log" 2>&1) 2>>"$d/$t-san.log"; then
            echo "$n	caught by $t (ASan+UBSan)	$f: $what"
            rm -rf "$d"
            return
        fi
    done
    echo "$n	SURVIVED	$f: $what"
}
export -f one one_module
export root work base CFLAGS_LIB EF_SMALL SAN UNIT UNIT_SAN REPLAYS MODULE_FLAGS MODULE_FIRST PYTHON_SYSTEM

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
