#!/usr/bin/env bash
# man_lint.t — the manual pages in man/: `mandoc -T lint` reports nothing
# above style level, `man ./man/PAGE` renders them with the sections a
# reader looks for, and every launcher option is documented in collprof.1.
. "$(dirname "$0")/tap.sh"
command -v mandoc >/dev/null || skip_all "mandoc not installed"
cd "$TOP" || exit 1
pages=(man/collprof.1 man/collprof-collate.1 man/collprof.7)
for p in "${pages[@]}"; do
  ok "$p exists" test -s "$p"
  ok "$p: mandoc -T lint, nothing above style" bash -c "out=\$(mandoc -T lint -W warning '$p' 2>&1); [ -z \"\$out\" ] || { echo \"\$out\"; exit 1; }"
  if command -v groff >/dev/null; then
    ok "$p: groff -ww renders without warnings" bash -c "out=\$(groff -mandoc -ww -z -Tutf8 '$p' 2>&1); [ -z \"\$out\" ] || { echo \"\$out\"; exit 1; }"
  else
    skip "groff not installed"
  fi
  if command -v man >/dev/null; then
    MANWIDTH=80 MAN_DISABLE_SECCOMP=1 man "./$p" >"$T/page.txt" 2>"$T/err"
    ok "man ./$p renders NAME and DESCRIPTION" grep -q DESCRIPTION "$T/page.txt"
  else
    skip "man not installed"
  fi
done
MANWIDTH=80 mandoc -T utf8 man/collprof.1 2>/dev/null | col -b >"$T/c1.txt"
ok "collprof.1 has SYNOPSIS, OPTIONS, ENVIRONMENT, FILES, EXIT STATUS, EXAMPLES, SEE ALSO" bash -c \
  "for s in SYNOPSIS OPTIONS ENVIRONMENT FILES 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do grep -q \"^\$s\" '$T/c1.txt' || { echo \"no \$s\"; exit 1; }; done"
# Every long option of each tool's --help appears in its man page.
MANWIDTH=80 mandoc -T utf8 man/collprof-collate.1 2>/dev/null | col -b >"$T/c2.txt"
for tp in "collprof c1" "collprof-collate c2"; do
  set -- $tp
  if [ -x "$BIN/$1" ]; then
    opts=$("$BIN/$1" --help | grep -E '^ +-' | grep -o -- '--[a-z][a-z-]*' | sort -u)
    ok "$1 man page documents every option of $1 --help" bash -c \
      "for o in $(echo $opts); do grep -q -- \"\$o\" '$T/$2.txt' || { echo \"missing \$o\"; exit 1; }; done"
  else
    skip "no $BIN/$1"
  fi
done
MANWIDTH=80 mandoc -T utf8 man/collprof.7 2>/dev/null | col -b >"$T/c7.txt"
ok "collprof.7 describes summary.log, summary.json and the JSONL records" bash -c \
  "for w in summary.log summary.json recordType path rank clock event state meta; do grep -q \"\$w\" '$T/c7.txt' || { echo \"no \$w\"; exit 1; }; done"
done_testing
