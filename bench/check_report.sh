#!/usr/bin/env bash
# check_report.sh DIR — the smoke test's checks on a bench_redis run: the
# report has every section and well-formed tables, no NaN or negative
# figures, and the data files for the plots have one row per size/method.
set -euo pipefail
dir="$1"
md="$dir/latest.md"
fail() { echo "check_report: $*" >&2; exit 1; }
[ -s "$md" ] || fail "$md missing or empty"
for section in "## Targets" "## Memory per item" "### Where a seen key's bytes go" "## Memory per user" \
               "## 300 integer app ids" "## False-positive rate" "## Batch queries" "## Adds" \
               "## Where the server's time goes" "## Is the client the bottleneck?"; do
  grep -qF "$section" "$md" || fail "section '$section' missing"
done
grep -qF "drawn in proportion to each user's history" "$md" ||
  fail "the adds drawn by history size are missing"
grep -qF "in sessions (every user" "$md" || fail "the adds in sessions are missing"
grep -qF "Per history size: pages of" "$md" || fail "the adds per history size are missing"
grep -Eiq '(^|[^a-z])(nan|inf)([^a-z]|$)' "$md" && fail "NaN or Inf in the report"
grep -Eq '\| -[0-9]' "$md" && fail "a negative figure in a table"
# Every table row has as many cells as its header.
awk -F'|' '
  /^\|/ { if (!intable) { cols = NF; intable = 1 } else if (NF != cols) { print "row " NR " has " NF-2 " cells, header " cols-2; bad = 1 } next }
  { intable = 0 }
  END { exit bad }' "$md" || fail "ragged table"
[ "$(grep -vc '^#' "$dir/memory.dat")" -ge 2 ] || fail "memory.dat has too few rows"
[ "$(grep -vc '^#' "$dir/throughput.dat")" -ge 8 ] || fail "throughput.dat has too few rows"
echo "check_report: $md is well-formed"
