#!/bin/sh
# Runs every libFuzzer target in BUILD/bin for SECONDS each over its seed corpus,
# the targets side by side (each is one process; CI's wall clock is the
# longest, not the sum). A copy of the corpus is used so runs never write
# into the repository.
set -e
build=$1; secs=${2:-60}
pids=""
for t in "$build"/bin/fuzz_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  work=$(mktemp -d)
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/"
  echo "fuzz: $name for ${secs}s"
  ( "$t" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$build/" "$work" >"$build/$name.log" 2>&1
    rc=$?; rm -rf "$work"; exit $rc ) &
  pids="$pids $!:$name"
done
status=0
for entry in $pids; do
  pid=${entry%%:*}; name=${entry#*:}
  if ! wait "$pid"; then
    echo "fuzz: $name FAILED (see $build/$name.log)"; tail -40 "$build/$name.log"; status=1
  else
    echo "fuzz: $name"; grep -E 'stat::number_of_executed_units|Done' "$build/$name.log" | tail -2
  fi
done
exit $status
