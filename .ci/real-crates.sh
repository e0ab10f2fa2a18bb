#!/usr/bin/env bash
# Real crates that depend on parking_lot 0.12, built and tested with klock's
# parking_lot-compatible crate switched in by `[patch.crates-io]`
# (docs/parking-lot.md). Fetches each crate's published source through cargo
# (a scratch manifest pinning the exact versions, `cargo fetch`, then the
# `.crate` archive from cargo's own registry cache) into target/real-crates/,
# checks with `cargo tree` that the patch took (parking_lot resolves to
# crates/klock-parking-lot), then runs its tests. Nothing is downloaded by URL.
#
# Usage: .ci/real-crates.sh [--unpatched]   (--unpatched: the same, with the
# published parking_lot, to tell klock's failures from the crate's own)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
COMPAT="$ROOT/crates/klock-parking-lot"
WORK="$ROOT/target/real-crates"
PATCH=(--config "patch.crates-io.parking_lot.path=\"$COMPAT\"")
[ "${1:-}" = "--unpatched" ] && PATCH=()

# name version extra-cargo-test-args (why each skip, beside it)
CRATES=(
  # scheduled-thread-pool: a thread pool on parking_lot Mutex + Condvar
  # (timed waits, notify_one/notify_all); 13 tests, no dev-dependencies, ~5 s.
  # 0.2.7 is its last release on parking_lot 0.12.
  "scheduled-thread-pool 0.2.7"
  # r2d2: a connection pool on parking_lot Mutex + Condvar (timed waits,
  # wake-ups on check-in); 18 tests, no dev-dependencies, ~10 s.
  # test::events is skipped: it races r2d2's asynchronous release of a broken
  # connection against the next checkout and fails about half the time with
  # the published parking_lot too (3 of 6 runs on 2026-11-26, 2 vCPUs).
  "r2d2 0.8.10 --skip test::events"
)

mkdir -p "$WORK"
CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"

# The published sources, through cargo: a manifest that depends on exactly
# these versions, fetched into cargo's registry cache.
FETCH="$WORK/fetch"
mkdir -p "$FETCH/src"
: >"$FETCH/src/lib.rs"
{
  printf '[package]\nname = "klock-real-crates-fetch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
  printf '[workspace]\n\n[dependencies]\n'
  for spec in "${CRATES[@]}"; do
    read -r name version _ <<<"$spec"
    printf '%s = "=%s"\n' "$name" "$version"
  done
} >"$FETCH/Cargo.toml"
cargo fetch -q --manifest-path "$FETCH/Cargo.toml"

# The archive cargo fetched for name-version, from its registry cache.
crate_archive() {
  local f
  for f in "$CARGO_HOME"/registry/cache/*/"$1-$2.crate"; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  echo "real-crates: cargo fetch left no $1-$2.crate under $CARGO_HOME/registry/cache" >&2
  return 1
}

for spec in "${CRATES[@]}"; do
  read -r name version skip <<<"$spec"
  dir="$WORK/$name-$version"
  rm -rf "$dir"
  archive=$(crate_archive "$name" "$version")
  tar xzf "$archive" -C "$WORK"
  cd "$dir"
  # A workspace of its own, not klock's.
  printf '\n[workspace]\n' >>Cargo.toml
  cargo generate-lockfile -q "${PATCH[@]}"
  # r2d2 takes scheduled-thread-pool ^0.2: pin the release on parking_lot 0.12
  # so that every parking_lot in its tree is the patched one.
  if grep -q '"scheduled-thread-pool"' Cargo.lock && [ "$name" != scheduled-thread-pool ]; then
    cargo update -q "${PATCH[@]}" -p scheduled-thread-pool --precise 0.2.7
  fi
  echo "== $name $version: cargo tree -i parking_lot"
  tree=$(cargo tree -i parking_lot -e normal "${PATCH[@]}")
  echo "$tree"
  if [ ${#PATCH[@]} -gt 0 ] && ! grep -q "^parking_lot v0.12.* ($COMPAT)" <<<"$tree"; then
    echo "real-crates: the patch did not take for $name (parking_lot is not $COMPAT)" >&2
    exit 1
  fi
  echo "== $name $version: cargo test"
  # shellcheck disable=SC2086
  cargo test -q "${PATCH[@]}" -- $skip
  cd "$ROOT"
done
echo "real-crates: all passed"
