#!/usr/bin/env bash
# unit.t — runs every C unit test binary $COLLPROF_BUILD/test/test_* (built
# from test/unit/test_*.c), one TAP test point per binary, its own TAP
# output shown indented as a subtest.  A binary passes when it exits 0,
# printed a plan and no "not ok".  Each gets a private output folder.
. "$(dirname "$0")/tap.sh"
shopt -s nullglob
bins=("$B"/test/test_*)
[ ${#bins[@]} -gt 0 ] || skip_all "no unit test binaries in $B/test (run make first)"
plan ${#bins[@]}
for bin in "${bins[@]}"; do
  name=$(basename "$bin")
  mkdir -p "$T/$name"
  out=$(cd "$T/$name" && COLLPROF_OUTPUT_DIR="$T/$name/out" timeout 300 "$bin" 2>"$T/$name.err")
  rc=$?
  printf '%s\n' "$out" | sed 's/^/    /'
  if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^1\.\.[0-9]' && ! printf '%s\n' "$out" | grep -q '^not ok'; then
    _tap_report 0 "$name"
  else
    _tap_report 1 "$name (exit $rc)"
    # on stderr too, so that prove shows which check failed without -v
    printf '%s\n' "$out" | grep -A3 '^not ok' | sed 's/^/# /' | head -n 40 >&2
    printf '%s\n' "$out" | grep -A2 '^not ok' | sed 's/^/    /' | head -n 8 | _tap_faillog
    sed 's/^/# stderr: /' "$T/$name.err" | head -n 20 | tee /dev/stderr
  fi
done
