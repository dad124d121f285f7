#!/bin/sh
# `larmor --screenshot FILE`: reconstructs B32 (gridding, then CG) in the
# real application and writes the window as a PNG. Skips without a display.
# Regenerate the README's picture with:
#   xvfb-run -a -s "-screen 0 1600x1000x24 -noreset" env GSK_RENDERER=cairo GDK_BACKEND=x11 \
#       GTK_A11Y=none build/gui/larmor --screenshot docs/screenshot.png
set -eu
larmor=$1
out=$2
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
    echo "SKIP: no display (run under xvfb-run)" >&2
    exit 77
fi
rm -f "$out"
"$larmor" --screenshot "$out" --iterations 60
# A PNG of a window-sized picture: signature and a plausible size.
head -c 8 "$out" | od -An -tx1 | tr -d ' \n' | grep -q '^89504e470d0a1a0a$'
size=$(wc -c < "$out")
[ "$size" -gt 20000 ]
echo "wrote $out ($size bytes)"
