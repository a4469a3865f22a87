#!/usr/bin/env bash
# Build the Attention Lab image and check it for real on a machine without a container engine:
#   1. a local Debian bookworm base with Python 3.11 (debootstrap; made once, then reused),
#   2. `podman build --isolation chroot --storage-driver vfs` of ./Dockerfile on that base, torch
#      from the machine's local wheel folder, the rest from the package index,
#   3. the image's own CMD, WORKDIR, USER and ENV, started from its mounted root file system under
#      chroot (`podman run` cannot set rlimits here), read-only with a tmpfs /tmp as in
#      deploy/k8s, in a fresh network namespace of its own,
#   4. the image's HEALTHCHECK, GET /api/health and one POST /api/translate over that loopback,
#      a few more translations for requests/s, compares of every model, and the resident memory of
#      the server and of its stepper processes,
#   5. stop, unmount and remove the namespace (also on failure or Ctrl-C). Safe to run again.
#
#   apt-get install -y podman debootstrap      # once
#   sudo scripts/check-container.sh            # as root
#
# Settings (environment): IMAGE, BASE_IMAGE, WORK_DIR, WHEELS, PIP_INDEX, CA_BUNDLE, TORCH_VARIANT,
# STARTUP_TIMEOUT, ATTENTION_LAB_MODELS (default: every model with a checkpoint), CHECKPOINTS_DIR (a
# host folder mounted read-only over the image's checkpoints for the run, e.g. to measure memory
# with another set of checkpoints; default: the image's own), SKIP_BUILD=1 (check the existing IMAGE).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/attention-lab:check}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian-py311:bookworm}
WORK_DIR=${WORK_DIR:-/var/tmp/attention-lab-deploy}
WHEELS=${WHEELS:-/opt/wheels}                        # holds torch-2.13.0+cpu-...whl
PIP_INDEX=${PIP_INDEX:-https://pypi.org/simple}      # torch's dependencies and the project's
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
TORCH_VARIANT=${TORCH_VARIANT:-cpu}
STARTUP_TIMEOUT=${STARTUP_TIMEOUT:-300}
HOST_PY=/usr/bin/python3
PODMAN=(podman --storage-driver vfs)
NICE=(nice -n 10)
ROOT=$WORK_DIR/root                                   # read-only view of the mounted image

[ "$(id -u)" = 0 ] || { echo "run as root (chroot, mount and unshare need it)"; exit 2; }
for tool in podman debootstrap jq nsenter unshare chroot ip; do
    command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install -y podman debootstrap jq)"; exit 2; }
done
mkdir -p "$WORK_DIR" "$ROOT"

say() { printf '== %s\n' "$*"; }
human() { numfmt --to=iec-i --suffix=B --format=%.1f "$1"; }

NETNS_PID= SERVER_PID= IMAGE_MOUNTED= CKPT_MOUNT=
cleanup() {
    local flags=$-
    set +e
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID"; sleep 3; kill -KILL "$SERVER_PID" 2>/dev/null
    fi
    [ -n "$NETNS_PID" ] && kill "$NETNS_PID" 2>/dev/null
    for m in ${CKPT_MOUNT:+"$CKPT_MOUNT"} "$ROOT/dev" "$ROOT/proc" "$ROOT/tmp" "$ROOT"; do
        mountpoint -q "$m" && umount "$m"
    done
    [ -n "$IMAGE_MOUNTED" ] && "${PODMAN[@]}" image unmount "$IMAGE" >/dev/null 2>&1
    IMAGE_MOUNTED=
    [[ $flags == *e* ]] && set -e
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
IMAGE_MOUNTED=1 cleanup   # mounts left by an earlier run that was killed hard

# --- 1. base image ----------------------------------------------------------------------------
if "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
    say "base $BASE_IMAGE: present"
else
    say "base $BASE_IMAGE: debootstrap bookworm (python3.11, venv, pip, ca-certificates)"
    t0=$(date +%s)
    rm -rf "$WORK_DIR/rootfs"
    "${NICE[@]}" debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
        bookworm "$WORK_DIR/rootfs" http://deb.debian.org/debian >"$WORK_DIR/debootstrap.log" 2>&1 \
        || { tail -20 "$WORK_DIR/debootstrap.log"; exit 1; }
    rm -rf "$WORK_DIR/rootfs"/var/cache/apt/archives/*.deb "$WORK_DIR/rootfs"/var/lib/apt/lists/*
    tar -C "$WORK_DIR/rootfs" -c . | "${PODMAN[@]}" import --quiet \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["python3"]' - "$BASE_IMAGE" >/dev/null
    rm -rf "$WORK_DIR/rootfs"
    say "base made in $(( $(date +%s) - t0 ))s"
fi

# --- 2. build ---------------------------------------------------------------------------------
if [ "${SKIP_BUILD:-0}" = 1 ] && "${PODMAN[@]}" image exists "$IMAGE"; then
    say "build: skipped (SKIP_BUILD=1), checking the existing $IMAGE"
else
    old_id=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
    say "build $IMAGE (BASE_IMAGE=$BASE_IMAGE TORCH_VARIANT=$TORCH_VARIANT)"
    t0=$(date +%s)
    "${NICE[@]}" "${PODMAN[@]}" build --isolation chroot --format docker --layers=false --tag "$IMAGE" \
        --build-arg BASE_IMAGE="$BASE_IMAGE" \
        --build-arg TORCH_VARIANT="$TORCH_VARIANT" \
        --build-arg TORCH_INDEX_URL="$PIP_INDEX" \
        --build-arg PIP_FIND_LINKS=/opt/wheels \
        --build-arg PIP_CERT=/opt/build-ca.crt \
        -v "$WHEELS:/opt/wheels:ro" -v "$CA_BUNDLE:/opt/build-ca.crt:ro" \
        -f Dockerfile . >"$WORK_DIR/build.log" 2>&1 || { tail -40 "$WORK_DIR/build.log"; exit 1; }
    build_s=$(( $(date +%s) - t0 ))
    new_id=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE")
    if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
        "${PODMAN[@]}" rmi "$old_id" >/dev/null 2>&1 || true   # the previous run's image, now untagged
    fi
    grep -E '^torch [0-9]' "$WORK_DIR/build.log" | tail -1 | sed 's/^/   builder check: /'
    say "build time: ${build_s}s"
fi
size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
say "image size: $(human "$size") ($size bytes)"

# --- 3. start the image's command -------------------------------------------------------------
inspect=$("${PODMAN[@]}" image inspect "$IMAGE")
config=$(jq '.[0].Config' <<<"$inspect")
mapfile -t CMD < <(jq -r '(.Entrypoint // []) + (.Cmd // []) | .[]' <<<"$config")
mapfile -t ENVS < <(jq -r '.Env // [] | .[]' <<<"$config")
mapfile -t HEALTH < <(jq -r '.[0].Healthcheck.Test // [] | .[]' <<<"$inspect")
workdir=$(jq -r '.WorkingDir // "/"' <<<"$config")
user=$(jq -r '.User // "0:0"' <<<"$config")
ports=$(jq -r '.ExposedPorts // {} | keys | join(" ")' <<<"$config")
uid=${user%%:*} gid=${user#*:}
[ "$uid" != 0 ] || { echo "the image runs as root"; exit 1; }
echo "   CMD: ${CMD[*]}"
echo "   USER $user, WORKDIR $workdir, EXPOSE $ports, HEALTHCHECK ${HEALTH[0]:-none}"

mnt=$("${PODMAN[@]}" image mount "$IMAGE"); IMAGE_MOUNTED=1
mount --bind "$mnt" "$ROOT"
mount -o remount,bind,ro "$ROOT"                     # readOnlyRootFilesystem, as in deploy/k8s
mount -t proc proc "$ROOT/proc"
mount -t tmpfs -o size=64m,mode=1777 tmpfs "$ROOT/tmp"
mount --bind /dev "$ROOT/dev"
home=$(awk -F: -v u="$uid" '$3 == u {print $6}' "$ROOT/etc/passwd")

ckpt_dir=$(printf '%s\n' "${ENVS[@]}" | sed -n 's/^ATTENTION_LAB_CHECKPOINTS=//p')
ckpt_dir=${ckpt_dir:-$workdir/checkpoints}
unreadable=$(find "$ROOT$workdir" "$ROOT/opt/venv" ! -perm -o+r | wc -l)
echo "   files in $workdir and /opt/venv that the server user cannot read: $unreadable"
[ "$unreadable" = 0 ] || exit 1
echo "   checkpoints in the image: $(cd "$ROOT$ckpt_dir" && ls -d */ | tr -d / | paste -sd, -)" \
     "($(du -sh "$ROOT$ckpt_dir" | cut -f1)); training state or logs shipped:" \
     "$(find "$ROOT$ckpt_dir" -name 'train_state*' -o -name '*.log' | wc -l) files"
if [ -n "${CHECKPOINTS_DIR:-}" ]; then
    CKPT_MOUNT=$ROOT$ckpt_dir
    mount --bind "$CHECKPOINTS_DIR" "$CKPT_MOUNT" && mount -o remount,bind,ro "$CKPT_MOUNT"
    echo "   for this run: $CHECKPOINTS_DIR mounted read-only over $ckpt_dir"
fi
shipped=$(cd "$ROOT$ckpt_dir" && for f in */model.safetensors; do [ -e "$f" ] && echo "${f%%/*}"; done | paste -sd, -)
models=${ATTENTION_LAB_MODELS:-$shipped}
[ -n "$models" ] || { echo "no checkpoints with weights"; exit 1; }

unshare --net sleep infinity & NETNS_PID=$!
sleep 0.5
IN_NS=(nsenter --net="/proc/$NETNS_PID/ns/net")
"${IN_NS[@]}" ip link set lo up

say "start as $user in a fresh network namespace: ATTENTION_LAB_MODELS=$models ATTENTION_LAB_DEVICE=cpu"
t0=$(date +%s%N)
"${IN_NS[@]}" chroot --userspec="$uid:$gid" --groups="$gid" "$ROOT" \
    /usr/bin/env -i --chdir="$workdir" "${ENVS[@]}" HOME="${home:-/}" HOSTNAME=attention-lab \
    ATTENTION_LAB_DEVICE=cpu ATTENTION_LAB_MODELS="$models" OMP_NUM_THREADS=1 \
    "${CMD[@]}" >"$WORK_DIR/server.log" 2>&1 &
SERVER_PID=$!

# --- 4. probe ---------------------------------------------------------------------------------
ready=
for _ in $(seq "$STARTUP_TIMEOUT"); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    if "${IN_NS[@]}" "$HOST_PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/api/health', timeout=2)" 2>/dev/null; then
        ready=1; break
    fi
    sleep 1
done
if [ -z "$ready" ]; then
    echo "server did not become healthy; its log:"; tail -40 "$WORK_DIR/server.log"; exit 1
fi
say "healthy after $(( ($(date +%s%N) - t0) / 1000000 )) ms"

if [ "${HEALTH[0]:-}" = CMD ]; then
    "${IN_NS[@]}" chroot --userspec="$uid:$gid" --groups="$gid" "$ROOT" \
        /usr/bin/env -i --chdir="$workdir" "${ENVS[@]}" "${HEALTH[@]:1}" \
        && echo "   image HEALTHCHECK: exit 0 (healthy)" \
        || { echo "   image HEALTHCHECK: failed"; exit 1; }
fi

model=transformer
[[ ",$models," == *",transformer,"* ]] || model=${models%%,*}
"${IN_NS[@]}" "$HOST_PY" - "$model" <<'PY'
import json
import sys
import time
import urllib.error
import urllib.request

base, model = "http://127.0.0.1:8000", sys.argv[1]


def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as error:
        sys.exit(f"{'GET' if body is None else 'POST'} {path} -> {error.code} {error.read().decode()}")


status, text = call("/api/health")
print(f"GET /api/health -> {status} {text}")
if json.loads(text).get("status") != "ok":
    sys.exit("the server is up but not every model loaded")
body = {"text": "Je mange du pain.", "model": model}
t0 = time.perf_counter()
status, text = call("/api/translate", body)
print(f"POST /api/translate {json.dumps(body, ensure_ascii=False)} -> {status} "
      f"({(time.perf_counter() - t0) * 1000:.0f} ms)\n  {text}")
sentences = ["Il fait beau aujourd'hui.", "Où est la gare ?", "Nous avons faim.", "Elle lit un livre.",
             "Je ne sais pas.", "Tu es très gentil.", "Le chat dort sur le lit.", "Ils sont partis hier.",
             "Peux-tu m'aider ?", "C'est une bonne idée.", "J'aime la musique.", "Il pleut encore.",
             "Ferme la porte, s'il te plaît.", "Nous allons à la plage.", "Je suis fatigué.",
             "Quelle heure est-il ?", "Mon frère est médecin.", "Le café est chaud.",
             "Je t'attends depuis une heure.", "Ce livre est à moi."]
t0 = time.perf_counter()
for sentence in sentences:
    call("/api/translate", {"text": sentence, "model": model})
rate = len(sentences) / (time.perf_counter() - t0)
print(f"{len(sentences)} sequential /api/translate ({model}, greedy, 1 torch thread): {rate:.1f} requests/s")
# The heaviest requests, once per loaded model, before the memory is read: beam search, every
# attention map, and the gradients of the longest input the server accepts.
long_text = "Le petit chat noir dort tranquillement sur le vieux canapé du salon."
names = json.loads(call("/api/health")[1])["models"]
t0 = time.perf_counter()
for name in names:
    call("/api/translate", {"text": long_text, "model": name, "beam_size": 8})
    call("/api/attention", {"text": long_text, "model": name})
heaviest = f"beam 8 + /api/attention for {len(names)} models"
if {"rnn", "lstm"} & set(names):  # the gradient curves compare the recurrent encoders
    call("/api/gradients", {"text": long_text, "length": 200})
    heaviest += ", /api/gradients length 200"
print(f"heaviest requests ({heaviest}): {time.perf_counter() - t0:.1f} s")
# The readers' compares are stepped in the stepper processes (app/runtime/stepper_client.py), whose memory
# is read below: every model on each sentence, and on the long one
t0 = time.perf_counter()
for sentence in [*sentences, long_text]:
    status, text = call("/api/compare", {"text": sentence})
    if any('"error"' in line for line in text.splitlines()):
        sys.exit(f"POST /api/compare {sentence!r}: {text}")
print(f"{len(sentences) + 1} POST /api/compare (every model): {time.perf_counter() - t0:.1f} s")
PY

uid_now=$(awk '/^Uid:/ {print $2}' "/proc/$SERVER_PID/status")
rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status")
hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$SERVER_PID/status")
say "server pid $SERVER_PID runs as uid $uid_now; resident memory after serving: VmRSS $((rss_kb / 1024)) MiB, peak VmHWM $((hwm_kb / 1024)) MiB ($models)"
steppers=0
for status in /proc/[0-9]*/status; do
    [ "$(awk '/^PPid:/ {print $2}' "$status" 2>/dev/null)" = "$SERVER_PID" ] || continue
    pid=${status#/proc/}; pid=${pid%/status}
    grep -qa "app.runtime.stepper_child" "/proc/$pid/cmdline" 2>/dev/null || continue
    steppers=$((steppers + 1))
    echo "   stepper process pid $pid: VmRSS $(($(awk '/^VmRSS:/ {print $2}' "$status") / 1024)) MiB," \
         "peak VmHWM $(($(awk '/^VmHWM:/ {print $2}' "$status") / 1024)) MiB"
done
echo "   stepper processes: $steppers"

# --- 5. stop ----------------------------------------------------------------------------------
kill -TERM "$SERVER_PID"
for _ in $(seq 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "server ignored SIGTERM"; exit 1
fi
wait "$SERVER_PID" 2>/dev/null && rc=0 || rc=$?
SERVER_PID=
grep -q "Finished server process" "$WORK_DIR/server.log" && echo "   uvicorn: $(grep 'Finished server process' "$WORK_DIR/server.log" | tail -1)"
say "stopped on SIGTERM (exit $rc: uvicorn re-raises the signal after its graceful shutdown); cleaning up"
cleanup; trap - EXIT
mountpoint -q "$ROOT" && { echo "still mounted: $ROOT"; exit 1; }
say "container check passed"
