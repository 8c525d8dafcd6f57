#!/usr/bin/python3
"""apply.py FILE OCCURRENCE OLD NEW — replace the OCCURRENCE-th (1-based)
OLD text in FILE by NEW (tests/mutants/run.sh); exit status 1 if there is
no such occurrence (the code moved: mutants.txt needs updating)."""
import sys

path, occurrence, old, new = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(path) as f:
    src = f.read()
at = -1
for _ in range(occurrence):
    at = src.find(old, at + 1)
    if at < 0:
        sys.exit(f"{path}: occurrence {occurrence} of {old!r} not found")
with open(path, "w") as f:
    f.write(src[:at] + new + src[at + len(old):])
