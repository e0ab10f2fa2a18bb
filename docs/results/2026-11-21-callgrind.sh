#!/usr/bin/env bash
# Instructions per uncontended lock+unlock, by callgrind (differential: the
# same run at 200k and 100k ops; lockbench adds a 10 % warm-up, so the
# difference covers 110k iterations). Includes the loop and the counter++
# (a few instructions, the same for every lock).
set -u
B=${B:-./target/release/lockbench}
count() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$B" uncontended \
    --locks "$1" --ops "$2" --runs 1 --no-idle-gate 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '| lock | instructions per lock+unlock |\n|---|---:|\n'
for l in ${LOCKS:-ttas std parking_lot pthread klock_tas klock_qspin klock_pvqspin klock_unfair klock_mutex klock_mutex_nospin}; do
  a=$(count "$l" 100000); b=$(count "$l" 200000)
  python3 -c "print('| $l | %.1f |' % (($b - $a) / 110000))"
done
