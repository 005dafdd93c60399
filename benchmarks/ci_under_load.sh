#!/usr/bin/env bash
# Issue 34's check: .ci/run three times in a row on a clean clone of this checkout's HEAD, with a
# busy loop on one core beside it. A summary line per run goes to stdout; each run's log to
# $LOGS/ciN.log. The clone sits beside this checkout, so ../shared is beside it too.
set -u
repo="$(cd "$(dirname "$0")/.." && pwd)"
clone="$(dirname "$repo")/ci-under-load"
logs="${LOGS:-/tmp}"
rm -rf "$clone" && git clone -q "$repo" "$clone" && cd "$clone" || exit 2
git log --oneline -1
yes > /dev/null &
busy=$!
trap 'kill $busy' EXIT
for i in 1 2 3; do
  start=$(date +%s); before=$(cut -d' ' -f1 /proc/loadavg)
  .ci/run > "$logs/ci$i.log" 2>&1; rc=$?
  after=$(cut -d' ' -f1 /proc/loadavg)
  echo "run $i: rc $rc, $(( $(date +%s) - start )) s, load $before -> $after," \
       "$(grep -E '[0-9]+ passed' "$logs/ci$i.log" | tail -1)"
done
