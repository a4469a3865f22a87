#!/usr/bin/env bash
# Train (or continue training) and evaluate the five shipped models, one after the other.
#   MINUTES="transformer=75 lstm-additive=62 lstm-dot=52 lstm=55 rnn=39" scripts/train_all.sh
# Each run resumes from checkpoints/NAME/train_state.* when present, so the script can be
# killed and started again; FRESH=1 deletes the training state and starts from scratch.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
MINUTES=${MINUTES:-"transformer=75 lstm-additive=62 lstm-dot=52 lstm=55 rnn=39"}
DEVICE=${DEVICE:-auto}
for entry in $MINUTES; do
  name=${entry%%=*}; minutes=${entry#*=}
  if [ "${FRESH:-0}" = 1 ]; then rm -f "checkpoints/$name"/train_state.*; fi
  echo "== $name: $minutes minutes ($(date -u +%H:%M:%S))"
  "$PY" -m models.train --model "$name" --minutes "$minutes" --resume --device "$DEVICE"
  "$PY" -m models.evaluate --model "$name"
done
echo "== done ($(date -u +%H:%M:%S))"
