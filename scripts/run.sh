#!/usr/bin/env bash
# The main job: the GUI with the default phantom where there is a display,
# otherwise a headless demo reconstruction of B32 (CG and gridding) that
# writes NIfTI volumes, a PNG montage and a metrics table to ./larmor-demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; } && [ -x build/gui/larmor ]; then
  exec build/gui/larmor "$@"
fi
exec build/cli/larmor-cli demo --out larmor-demo "$@"
