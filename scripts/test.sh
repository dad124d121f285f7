#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (GUI tests under
# Xvfb; GPU tests skip themselves without a GPU), then the sanitizer build
# and the fuzz smoke run when their scripts exist. Ends with one line:
#   N passed, N failed, N skipped
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }

export GSK_RENDERER=cairo GDK_BACKEND=x11 GTK_A11Y=none NO_AT_BRIDGE=1
# -noreset: by default Xvfb resets when its last client leaves, and a test
# connecting during the reset gets "cannot open display" (stop 19's CI
# failure; about 5 % of connections with three clients coming and going)
run_suite() { # build dir, extra meson test args...
  local dir=$1; shift
  xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" meson test -C "$dir" --print-errorlogs "$@"
}
run_suite build
status=$?
logs=(build/meson-logs/testlog.json)
if [ -f tests/sanitize.sh ] && [ "${LARMOR_SKIP_SANITIZE:-0}" != 1 ]; then
  bash tests/sanitize.sh || status=1
  [ -f build-sanitize/meson-logs/testlog.json ] && logs+=(build-sanitize/meson-logs/testlog.json)
fi
python3 - "${logs[@]}" <<'PY'
import json, sys
p = f = s = 0
failed = []
for path in sys.argv[1:]:
    for line in open(path):
        t = json.loads(line)
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"): p += 1
        elif r == "SKIP": s += 1
        else:
            f += 1
            failed.append((path.split("/")[0], t))
# CI keeps only the end of the output: each failure's name and last lines
# come here, just above the count
for build, t in failed:
    print(f"FAILED in {build}: {t.get('name')} ({t.get('result')}, {t.get('duration', 0):.1f} s)")
    text = (t.get("stdout") or "") + (t.get("stderr") or "")
    for line in text.rstrip().splitlines()[-15:]:
        print("    " + line[:300])
print(f"{p} passed, {f} failed, {s} skipped")
PY
exit $status
