#!/usr/bin/env bash
# Start the server as a deployment does, from what `pip install .` installs and nothing else:
#   1. a fresh virtual environment (no dev extras, nothing from the project's .venv): torch's CPU
#      wheel first (as the Makefile and the Dockerfile pin it), then `pip install .`,
#   2. the Dockerfile's own CMD and ENV (read from ./Dockerfile, so the two cannot drift), run from
#      the repository root as the image runs from /app, on a free loopback port,
#   3. GET /api/health until 200 (every model loaded), then POST /api/compare on the page's sentence:
#      one line per model, none an error,
#   4. SIGTERM, and the server must finish its graceful shutdown.
# A module the server imports that no runtime dependency provides fails step 3 with its traceback.
#
#   scripts/check-installed.sh            # VENV_DIR (default: a new temporary folder), PYTHON, TIMEOUT
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
TIMEOUT=${TIMEOUT:-180}
VENV_DIR=${VENV_DIR:-$(mktemp -d /tmp/attention-lab-installed.XXXXXX)}
LOG=$VENV_DIR/server.log
say() { printf '== %s\n' "$*"; }

SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT

t0=$(date +%s)
say "fresh venv in $VENV_DIR: torch==2.13.0, then pip install . (no extras)"
"$PYTHON" -m venv "$VENV_DIR/venv"
PY=$VENV_DIR/venv/bin/python
"$PY" -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
"$PY" -m pip install --quiet --disable-pip-version-check .
for dev_only in httpx pytest playwright import_linter grimp; do
    if "$PY" -c "import $dev_only" 2>/dev/null; then echo "$dev_only is installed: not a plain install"; exit 1; fi
done
say "installed in $(( $(date +%s) - t0 )) s"

# The Dockerfile's CMD (a JSON array that may span lines) and ENV (KEY=VALUE pairs), as the image has them.
mapfile -t CMD < <("$PY" - <<'PY'
import json, re
text = re.sub(r"\\\n", " ", open("Dockerfile").read())
print("\n".join(json.loads(re.search(r"^CMD (\[.*\])\s*$", text, re.M).group(1))))
PY
)
mapfile -t ENVS < <("$PY" - <<'PY'
import re, shlex
text = re.sub(r"\\\n", " ", open("Dockerfile").read())
runtime = text[text.rindex("\nFROM "):]  # the last stage's ENV only
for line in re.findall(r"^ENV (.*)$", runtime, re.M):
    for pair in shlex.split(line):
        key, value = pair.split("=", 1)
        if key not in ("PATH", "ATTENTION_LAB_CHECKPOINTS"):  # the venv's bin; the image's /app
            print(pair)
PY
)
PORT=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
# the image's line with the venv's python, on loopback and a free port (uvicorn takes the last --host/--port)
CMD[0]=$PY
CMD+=(--host 127.0.0.1 --port "$PORT")
echo "   ENV ${ENVS[*]}"
echo "   CMD ${CMD[*]}"

say "start"
t1=$(date +%s%N)
env "${ENVS[@]}" ATTENTION_LAB_DEVICE=cpu "${CMD[@]}" >"$LOG" 2>&1 &
SERVER_PID=$!

if ! "$PY" - "$PORT" "$TIMEOUT" "$SERVER_PID" <<'PY'
import json
import os
import sys
import time
import urllib.error
import urllib.request

port, timeout, pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
base = f"http://127.0.0.1:{port}"
began = time.monotonic()
while True:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the server exited before it answered (its log follows)")
    try:
        with urllib.request.urlopen(base + "/api/health", timeout=2) as response:
            health = json.loads(response.read())
            break
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        if time.monotonic() - began > timeout:
            sys.exit(f"no answer from /api/health within {timeout:g} s")
        time.sleep(0.25)
print(f"GET /api/health -> 200 after {time.monotonic() - began:.1f} s: {health['status']}, models {health['models']}, "
      f"unavailable {health['unavailable']}")
if health["status"] != "ok" or health["unavailable"]:
    sys.exit("not every model loaded")
body = json.dumps({"text": health["defaults"]["text"]}).encode()
request = urllib.request.Request(base + "/api/compare", data=body, headers={"Content-Type": "application/json"})
t0 = time.perf_counter()
with urllib.request.urlopen(request, timeout=120) as response:
    lines = [json.loads(line) for line in response.read().decode().splitlines() if line.strip()]
print(f"POST /api/compare -> {response.status} in {(time.perf_counter() - t0) * 1000:.0f} ms:")
for line in lines:
    print(f"   {line['model']}: {line.get('translation', line.get('error'))!r}")
if sorted(line["model"] for line in lines) != sorted(health["models"]) or any("error" in line for line in lines):
    sys.exit("compare did not answer every model")
PY
then
    tail -40 "$LOG"; exit 1
fi
say "healthy and answering $(( ($(date +%s%N) - t1) / 1000000 )) ms after start"

kill -TERM "$SERVER_PID"
for _ in $(seq 60); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$SERVER_PID" 2>/dev/null; then echo "server ignored SIGTERM"; tail -20 "$LOG"; exit 1; fi
SERVER_PID=
grep -q "Finished server process" "$LOG" || { echo "no graceful shutdown in the log"; tail -20 "$LOG"; exit 1; }
if grep -qE "Traceback|ERROR" "$LOG"; then echo "errors in the server's log:"; grep -nE -A5 "Traceback|ERROR" "$LOG"; exit 1; fi
say "installed server check passed in $(( $(date +%s) - t0 )) s"
[ -n "${KEEP:-}" ] || rm -rf "$VENV_DIR"
