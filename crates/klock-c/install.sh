#!/bin/sh
# Build klock's C library and install it under PREFIX (default $HOME/.local):
#
#   PREFIX/include/klock.h
#   PREFIX/lib/libklock_c.so, PREFIX/lib/libklock_c.a
#   PREFIX/lib/pkgconfig/klock.pc
#
# Usage: crates/klock-c/install.sh [PREFIX]
#
# Then: PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cc prog.c $(pkg-config --cflags --libs klock)
# and run with LD_LIBRARY_PATH=PREFIX/lib, or link with an rpath
# (-Wl,-rpath,PREFIX/lib). Static linking: see docs/c.md.
#
# Environment: KLOCK_PROFILE, the cargo profile to build (default release;
# dev builds the debug library); CARGO_TARGET_DIR and the rest of cargo's
# configuration are honoured; CARGO and RUSTC name the tools (default
# cargo, rustc).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-${HOME:?HOME is not set; give a PREFIX}/.local}
profile=${KLOCK_PROFILE:-release}
cargo=${CARGO:-cargo}
rustc=${RUSTC:-rustc}

case "$prefix" in
  /*) ;;
  *) prefix=$(pwd)/$prefix ;;
esac

# 1. Build (cdylib + staticlib; the crate types are set in Cargo.toml).
"$cargo" build --manifest-path "$here/Cargo.toml" -p klock-c --profile "$profile"

# Where cargo put them: the target directory from cargo itself (it knows
# CARGO_TARGET_DIR and .cargo/config), then the profile's folder.
target=$("$cargo" metadata --manifest-path "$here/Cargo.toml" --format-version 1 --no-deps |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[ -n "$target" ] || { echo "install.sh: cannot find cargo's target directory" >&2; exit 1; }
case "$profile" in
  dev | test) outdir=$target/debug ;;
  bench) outdir=$target/release ;;
  *) outdir=$target/$profile ;;
esac
for f in libklock_c.so libklock_c.a; do
  [ -f "$outdir/$f" ] || { echo "install.sh: $outdir/$f was not built" >&2; exit 1; }
done

# 2. The native libraries a static link needs (pkg-config's Libs.private):
# what rustc reports for a staticlib. klock-c links nothing beyond the
# standard library's own (std, libc), so an empty staticlib gives the same
# list as `cargo rustc -p klock-c --crate-type staticlib -- --print
# native-static-libs`, without rebuilding klock-c with other flags.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
: >"$probe/probe.rs"
libs_private=$("$rustc" --edition 2021 --crate-type staticlib --crate-name probe \
  --print native-static-libs -o "$probe/libprobe.a" "$probe/probe.rs" 2>&1 |
  sed -n 's/.*native-static-libs: //p')
[ -n "$libs_private" ] || { echo "install.sh: rustc did not report native-static-libs" >&2; exit 1; }

version=$(sed -n 's/^#define KLOCK_VERSION "\(.*\)"$/\1/p' "$here/include/klock.h")

# 3. Install.
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
cp "$here/include/klock.h" "$prefix/include/klock.h"
# Copy to a temporary name, then rename: a running program that maps the
# old library keeps its (unlinked) copy.
for f in libklock_c.so libklock_c.a; do
  cp "$outdir/$f" "$prefix/lib/.$f.tmp"
  mv -f "$prefix/lib/.$f.tmp" "$prefix/lib/$f"
done
chmod 644 "$prefix/include/klock.h" "$prefix/lib/libklock_c.a"
chmod 755 "$prefix/lib/libklock_c.so"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" -e "s|@LIBS_PRIVATE@|$libs_private|" \
  "$here/klock.pc.in" >"$prefix/lib/pkgconfig/klock.pc"

echo "klock $version installed in $prefix ($profile build)"
echo "  PKG_CONFIG_PATH=$prefix/lib/pkgconfig cc prog.c \$(pkg-config --cflags --libs klock)"
echo "  run with LD_LIBRARY_PATH=$prefix/lib, or link with -Wl,-rpath,$prefix/lib"
