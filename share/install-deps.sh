#!/usr/bin/env bash
# install-deps.sh — make sure the Debian packages collprof builds and tests
# with are present.  As root it installs what is missing with apt-get; as
# another user it prints the exact apt-get line and fails.  Called by
# `make check` and `make demo` so that both work on a fresh Debian 12.
set -u
pkgs=(gcc make libc6-dev libxxhash-dev libjansson-dev libopenmpi-dev openmpi-bin
      gfortran python3 jq mandoc man-db perl)
# The HTML report test drives a headless browser.
pkgs+=(chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "collprof: missing Debian packages; run as root:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "collprof: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
