#!/usr/bin/env bash
# Configures and builds Larmor in ./build (warnings as errors in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
werror=false; [ "${CI:-}" = true ] && werror=true
if [ ! -f build/build.ninja ]; then
  meson setup build -Dwerror=$werror >/dev/null
else
  meson configure build -Dwerror=$werror >/dev/null
fi
ninja -C build >/dev/null
