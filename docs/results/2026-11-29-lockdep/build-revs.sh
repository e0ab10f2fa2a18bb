#!/bin/bash
# builds libklock_preload.so at each design's commit into /tmp/ld/revs/<name>.so
set -e
cd /work/main
for pair in d1:b29802c d2:81a6a6b d3:1a9e3e5 d4:e2ddead; do
  name=${pair%%:*}; rev=${pair#*:}
  wt=/tmp/ld/wt-$name
  [ -d $wt ] || git worktree add -q --detach $wt $rev
  (cd $wt && CARGO_TARGET_DIR=/tmp/ld/target-revs cargo build -q --release -p klock-preload && cp /tmp/ld/target-revs/release/libklock_preload.so /tmp/ld/revs/$name.so)
  echo built $name $rev
done
