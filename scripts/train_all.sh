#!/usr/bin/env bash
# Train (or continue training) and evaluate the five shipped models, one after the other.
#   MINUTES="transformer=280 lstm-additive=112 lstm-dot=52 lstm=55 rnn=39" scripts/train_all.sh
# Each run resumes from checkpoints/NAME/train_state.* when present, so the script can be
# killed and started again; FRESH=1 deletes the training state and starts from scratch.
# The models of SNAPSHOTS (name=kept steps:shipped steps) keep the fp32 weights of the kept steps and
# of their last KEEP evaluations; after training the mean of those last weights replaces the kept
# checkpoint when it translates the validation split better (models.average), and the shipped steps
# are reduced to the snapshots the scrubber replays (models.snapshots). The LSTM learns to align
# later than the Transformer, so its snapshots sit later.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
MINUTES=${MINUTES:-"transformer=280 lstm-additive=112 lstm-dot=52 lstm=55 rnn=39"}
DEVICE=${DEVICE:-auto}
SNAPSHOTS=${SNAPSHOTS:-"transformer=50,150,300,600,1000:150,300,600 lstm-additive=300,600,900,1200,1600:300,900"}
KEEP=${KEEP:-6}
for entry in $MINUTES; do
  name=${entry%%=*}; minutes=${entry#*=}
  extra=(); ship=""
  for snap in $SNAPSHOTS; do
    if [ "${snap%%=*}" = "$name" ]; then
      steps=${snap#*=}; extra=(--snapshots "${steps%%:*}" --keep "$KEEP"); ship=${steps#*:}
    fi
  done
  if [ "${FRESH:-0}" = 1 ]; then rm -rf "checkpoints/$name"/train_state.* "checkpoints/$name"/{snapshots-fp32,averaging}; fi
  echo "== $name: $minutes minutes ($(date -u +%H:%M:%S))"
  "$PY" -m models.train --model "$name" --minutes "$minutes" --resume --device "$DEVICE" "${extra[@]}"
  if [ ${#extra[@]} -gt 0 ]; then "$PY" -m models.average --model "$name" --last "$KEEP"; fi
  "$PY" -m models.evaluate --model "$name"
  if [ ${#extra[@]} -gt 0 ]; then "$PY" -m models.snapshots --model "$name" --steps "$ship"; fi
done
echo "== done ($(date -u +%H:%M:%S))"
