#!/bin/bash
# usage: objcmp.sh [BASE_DIR] [NEW_DIR] [-v]
# Compares the exported klock_* and pthread_*(mutex|rwlock) functions of
# libklock_c.so and libklock_preload.so (base vs new), normalised for
# addresses: instruction offsets, rip displacements, absolute targets and
# Rust symbol hashes are masked; local jumps stay <fn+0xoff>.
# Columns: lib, symbol, insns (symbol names masked, as in the brief:
# same/DIFF), callee names (same/names: differ only in the demangled
# callee name), line counts base/new.  -v: print diffs (names masked).
BASE=${1:-/tmp/cbase-target/release}
NEW=${2:-target/release}
VERBOSE=${3:-}
norm() {
  objdump -d -C --no-show-raw-insn --disassemble="$2" "$1" \
  | sed -n '/^[0-9a-f]* <.*>:$/,$p' | sed '1d' | grep -v '^$' | grep -v '^Disassembly' \
  | sed -E 's/^ *[0-9a-f]+:\s*//; s/ +# .*$//; s/-?0x[0-9a-f]+\(%rip\)/REL(%rip)/g; s/\b[0-9a-f]{3,}( <)/ADDR\1/g; s/::h[0-9a-f]{16}//g; s/\s+/ /g'
}
mask() { sed -E 's/ <.*(\+0x[0-9a-f]+)>$/ <SYM\1>/; t; s/ <.*>$/ <SYM>/'; }
printf '%-20s %-32s %-6s %-6s %5s %5s\n' lib symbol insns names base new
for lib in libklock_c.so libklock_preload.so; do
  syms=$( (nm -D --defined-only "$BASE/$lib"; nm -D --defined-only "$NEW/$lib") | awk '$2=="T"{print $3}' | grep -E '^(klock_|pthread_.*(mutex|rwlock))' | sort -u)
  for s in $syms; do
    a=$(norm "$BASE/$lib" "$s"); b=$(norm "$NEW/$lib" "$s")
    am=$(printf '%s\n' "$a" | mask); bm=$(printf '%s\n' "$b" | mask)
    na=$(printf '%s\n' "$a" | grep -c .); nb=$(printf '%s\n' "$b" | grep -c .)
    if [ "$am" == "$bm" ]; then st=same; else st=DIFF; fi
    if [ "$a" == "$b" ]; then sn=same; else sn=names; fi
    [ $st == DIFF ] && sn=-
    printf '%-20s %-32s %-6s %-6s %5d %5d\n' "${lib%.so}" "$s" "$st" "$sn" "$na" "$nb"
    if [ "$st" == DIFF ] && [ -n "$VERBOSE" ]; then diff <(printf '%s\n' "$am") <(printf '%s\n' "$bm"); fi
  done
done
