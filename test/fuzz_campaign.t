#!/bin/bash
# fuzz_campaign.t — test/fuzz_campaign.sh: a few seconds of the campaign on
# this build pass; a replay that writes a stray stderr line, or exits
# non-zero, is a failure with its folder kept; bad arguments are refused.
. "$(dirname "$0")/tap.sh"
[ -x "$BIN/collprof-replay" ] || skip_all "no $BIN/collprof-replay (make first)"
FC=$TOP/test/fuzz_campaign.sh

out=$(TMPDIR=$T STEPS=2000 bash "$FC" "$B" 3 7 2>&1)
is "$?" 0 "a short campaign on this build passes"
like "$(tail -n 1 <<<"$out")" "^fuzz_campaign\.sh: [1-9][0-9]* runs, 0 failed, seeds 7\.\.[0-9]+, 2000 callbacks each$" \
  "its last line counts the runs and the seeds"

# a stand-in build: the replay complains on stderr in a non-collprof line
F=$T/fake
mkdir -p "$F/bin" "$F/lib"
: >"$F/lib/libcollprof.so"
printf '#!/bin/bash\necho "AddressSanitizer: heap-use-after-free" >&2\nexit %s\n' 0 >"$F/bin/collprof-replay"
printf '#!/bin/bash\nexit 0\n' >"$F/bin/collprof-collate"
chmod +x "$F/bin/"*
out=$(TMPDIR=$T bash "$FC" "$F" 1 3 2>&1)
is "$?" 1 "a stray stderr line fails the campaign"
like "$out" "FAIL seed 3, case '\|--threads 3': replay exit 0, collate exit 0; kept in " "the failure names its seed and case"
like "$out" "   AddressSanitizer: heap-use-after-free" "and shows the stray line"
kept=$(sed -n 's/.*kept in \([^ ]*\)$/\1/p' <<<"$out" | head -n 1)
ok "the failed run's folder is kept" test -d "$kept"
printf '#!/bin/bash\nexit 3\n' >"$F/bin/collprof-replay"
out=$(TMPDIR=$T bash "$FC" "$F" 1 2>&1)
like "$out" "replay exit 3" "a replay exiting non-zero fails"

TMPDIR=$T bash "$FC" "$B" >/dev/null 2>&1
is "$?" 2 "no SECONDS: usage"
TMPDIR=$T bash "$FC" "$B" soon >/dev/null 2>&1
is "$?" 2 "SECONDS not a number: refused"
TMPDIR=$T bash "$FC" "$T/none" 5 >/dev/null 2>&1
is "$?" 2 "no build there: refused"
done_testing
