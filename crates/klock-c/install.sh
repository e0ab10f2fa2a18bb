#!/bin/sh
# Build klock's C library and install it under PREFIX (default $HOME/.local):
#
#   PREFIX/include/klock.h
#   PREFIX/lib/libklock_c.so, PREFIX/lib/libklock_c.a
#   PREFIX/lib/pkgconfig/klock.pc
#
# Usage: crates/klock-c/install.sh [PREFIX]
#
# Then:
#   export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
#   cc prog.c -o prog $(pkg-config --cflags --libs klock) -pthread
#   LD_LIBRARY_PATH=PREFIX/lib ./prog
# or link with an rpath (-Wl,-rpath,PREFIX/lib) and run ./prog as it is.
# Static linking: see docs/c.md.
#
# The libraries are installed without debug info (the .so stripped with
# --strip-unneeded, the .a with --strip-debug): the release build carries
# line tables for profiling, about 22 MiB in the .a and 5 MiB in the .so.
#
# Environment: KLOCK_PROFILE, the cargo profile to build (default release;
# dev builds the debug library); KLOCK_INSTALL_DEBUG=1 installs the
# libraries with their debug info, KLOCK_INSTALL_DEBUG=split installs them
# stripped plus PREFIX/lib/libklock_c.so.debug, the .so's debug info, which
# gdb and perf find through the .so's debug link; CARGO_TARGET_DIR and the
# rest of cargo's configuration are honoured; CARGO, RUSTC, STRIP and
# OBJCOPY name the tools (default cargo, rustc, strip, objcopy).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-${HOME:?HOME is not set; give a PREFIX}/.local}
profile=${KLOCK_PROFILE:-release}
debug=${KLOCK_INSTALL_DEBUG:-0}
cargo=${CARGO:-cargo}
rustc=${RUSTC:-rustc}
strip=${STRIP:-strip}
objcopy=${OBJCOPY:-objcopy}

case "$debug" in
  0 | 1 | split) ;;
  *) echo "install.sh: KLOCK_INSTALL_DEBUG=$debug: expected 0, 1 or split" >&2; exit 1 ;;
esac
need() {
  command -v "$1" >/dev/null 2>&1 || {
    echo "install.sh: $1 not found (binutils); install it, or set KLOCK_INSTALL_DEBUG=1 to install unstripped libraries" >&2
    exit 1
  }
}
[ "$debug" = 1 ] || need "$strip"
[ "$debug" != split ] || need "$objcopy"

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

# 3. Install. Copy to a temporary name, strip that (unless
# KLOCK_INSTALL_DEBUG=1), then rename: a running program that maps the old
# library keeps its (unlinked) copy.
mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
cp "$here/include/klock.h" "$prefix/include/klock.h"
lib=$prefix/lib
for f in libklock_c.so libklock_c.a; do
  cp "$outdir/$f" "$lib/.$f.tmp"
done
if [ "$debug" = split ]; then
  "$objcopy" --only-keep-debug "$lib/.libklock_c.so.tmp" "$lib/libklock_c.so.debug"
  chmod 644 "$lib/libklock_c.so.debug"
fi
if [ "$debug" != 1 ]; then
  "$strip" --strip-unneeded "$lib/.libklock_c.so.tmp"
  "$strip" --strip-debug "$lib/.libklock_c.a.tmp"
fi
if [ "$debug" = split ]; then
  # The link names the file (found beside the .so) and holds its checksum.
  (cd "$lib" && "$objcopy" --add-gnu-debuglink=libklock_c.so.debug .libklock_c.so.tmp)
else
  rm -f "$lib/libklock_c.so.debug" # stale from an earlier split install
fi
for f in libklock_c.so libklock_c.a; do
  mv -f "$lib/.$f.tmp" "$lib/$f"
done
chmod 644 "$prefix/include/klock.h" "$lib/libklock_c.a"
chmod 755 "$lib/libklock_c.so"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" -e "s|@LIBS_PRIVATE@|$libs_private|" \
  "$here/klock.pc.in" >"$prefix/lib/pkgconfig/klock.pc"

case "$debug" in
  1) what="with debug info" ;;
  split) what="stripped; debug info in $lib/libklock_c.so.debug" ;;
  *) what="stripped" ;;
esac
echo "klock $version installed in $prefix ($profile build, $what)"
echo "compile and run a program with:"
echo "  export PKG_CONFIG_PATH=$prefix/lib/pkgconfig"
echo "  cc prog.c -o prog \$(pkg-config --cflags --libs klock) -pthread"
echo "  LD_LIBRARY_PATH=$prefix/lib ./prog"
echo "or link with -Wl,-rpath,$prefix/lib and run ./prog as it is"
