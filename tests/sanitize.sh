#!/bin/sh
# Builds the whole test suite with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer included) in its own build folder and runs it.
#   tests/sanitize.sh [BUILDDIR] [meson test arguments...]
# BUILDDIR defaults to build-sanitize at the repository root. The GUI and
# CUDA are left out (GTK and the CUDA runtime are not sanitizer-clean); the
# fuzz smoke suite is skipped (its targets are sanitized builds already).
# Every sanitizer report fails the test that produced it; the exit status is
# meson test's.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build-sanitize}
[ $# -gt 0 ] && shift

if [ ! -f "$B/build.ninja" ]; then
    meson setup "$B" "$SRC" \
        -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbuildtype=debugoptimized -Db_ndebug=false \
        -Dgui=disabled -Dcuda=disabled
fi
ninja -C "$B"

# detect_leaks: LeakSanitizer at exit of every test program (including a
# reconstruction cancelled mid-run); halt_on_error/abort_on_error: the first
# report fails the test; UBSan stops at the first finding with a stack.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
# Leaks inside third-party libraries (tests/lsan.supp says which and why).
LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$SRC/tests/lsan.supp:print_suppressions=0}
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS

meson test -C "$B" --no-suite fuzz --print-errorlogs --timeout-multiplier 4 "$@"
