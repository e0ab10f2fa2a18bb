# Sourced by .ci/run (and .ci/selftest): runs CI steps, each under a time
# bound, and reports each step's time.
#
#   ci_step NAME BOUND_SECONDS FUNCTION
#
# runs the exported bash function FUNCTION under `timeout BOUND_SECONDS` (its
# whole process group: every program the step started is signalled too; a
# step that ignores SIGTERM is killed 15 s later), prints "==== NAME: ok in
# Ns" when it ends, and on failure or timeout prints which step it was and
# the times so far, then exits non-zero. Bounds are about 3x a step's normal
# time on 2 cores (.ci/run lists them).

CI_TIMES=()
CI_START=$(date +%s)

ci_summary() {
  echo
  echo "CI step times (seconds):"
  local t
  for t in "${CI_TIMES[@]}"; do echo "  $t"; done
  echo "  total $(($(date +%s) - CI_START)) s"
}

ci_step() {
  local name=$1 bound=$2 fn=$3 start rc elapsed
  printf '\n==== %s (bound %d s) ====\n' "$name" "$bound"
  start=$(date +%s)
  set +e
  timeout --kill-after=15 "$bound" bash -c "set -euo pipefail; $fn"
  rc=$?
  set -e
  elapsed=$(($(date +%s) - start))
  if [ $rc -eq 0 ]; then
    CI_TIMES+=("$(printf '%5d  %-s (bound %d)' "$elapsed" "$name" "$bound")")
    printf '==== %s: ok in %d s ====\n' "$name" "$elapsed"
    return 0
  fi
  if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ "$elapsed" -ge "$bound" ]; then
    CI_TIMES+=("$(printf '%5d  %-s TIMED OUT (bound %d)' "$elapsed" "$name" "$bound")")
    printf '\nCI: step "%s" TIMED OUT: still running after its bound of %d s (killed)\n' \
      "$name" "$bound" >&2
  else
    CI_TIMES+=("$(printf '%5d  %-s FAILED (exit %d)' "$elapsed" "$name" "$rc")")
    printf '\nCI: step "%s" FAILED (exit status %d after %d s)\n' "$name" "$rc" "$elapsed" >&2
  fi
  ci_summary >&2
  exit 1
}
