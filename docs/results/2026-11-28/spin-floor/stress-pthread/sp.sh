#!/bin/bash
# sp.sh T DUR tag env...: one stress-ng --pthread run, prints tag ops/s(real) nsecs-start
T=$1; D=$2; tag=$3; shift 3
out=$(env "$@" stress-ng --pthread $T -t $D --metrics-brief 2>&1)
r=$(echo "$out" | awk '$4=="pthread" && $5 ~ /^[0-9]+$/ {print $5, $6, $10}')
s=$(echo "$out" | awk '/nanosecs to start/ {print $5}')
echo "$tag $r start=$s"
