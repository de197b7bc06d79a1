#!/bin/sh
# Runs a test binary as N shards side by side (`--shard I/N` each), for the
# slow runs where one process uses one core: valgrind serialises a process's
# threads, qemu-user is slow. Usage: test-shards.sh N COMMAND... (COMMAND ends
# with the test binary; the shard flag is appended). Each shard's output is
# printed whole, in order, when all have ended; fails if any shard failed.
set -u
n=$1; shift
dir=$(mktemp -d)
pids=""
i=0
while [ "$i" -lt "$n" ]; do
  "$@" --shard "$i/$n" >"$dir/$i.log" 2>&1 &
  pids="$pids $!"
  i=$((i + 1))
done
status=0
i=0
for pid in $pids; do
  if ! wait "$pid"; then status=1; fi
  echo "-- shard $i/$n"
  cat "$dir/$i.log"
  i=$((i + 1))
done
rm -rf "$dir"
exit $status
