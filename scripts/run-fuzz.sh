#!/bin/sh
# Runs every libFuzzer target in BUILD/bin for SECONDS each over its seed corpus.
# A copy of the corpus is used so runs never write into the repository.
set -e
build=$1; secs=${2:-60}
status=0
for t in "$build"/bin/fuzz_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  work=$(mktemp -d)
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/"
  echo "fuzz: $name for ${secs}s"
  if ! "$t" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$build/" "$work" >"$build/$name.log" 2>&1; then
    echo "fuzz: $name FAILED (see $build/$name.log)"; tail -40 "$build/$name.log"; status=1
  else
    grep -E 'stat::number_of_executed_units|Done' "$build/$name.log" | tail -2
  fi
  rm -rf "$work"
done
exit $status
