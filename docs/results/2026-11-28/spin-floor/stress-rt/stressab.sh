#!/bin/bash
for i in 1 2 3; do for s in before after; do /work/main/target/release/lockbench preload --workloads stress-mutex,stress-pthread --threads 2,8 --runs 3 --lib /tmp/m/pre-$s/libklock_preload.so > /tmp/m/st-$s-$i.txt 2>&1; done; done
echo done > /tmp/m/st-done
