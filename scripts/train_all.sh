#!/usr/bin/env bash
# Train (or continue training) and evaluate the five shipped models, one after the other.
#   MINUTES="transformer=130 lstm-additive=62 lstm-dot=52 lstm=55 rnn=39" scripts/train_all.sh
# Each run resumes from checkpoints/NAME/train_state.* when present, so the script can be
# killed and started again; FRESH=1 deletes the training state and starts from scratch.
# The models of SNAPSHOTS keep the fp32 weights of the steps SNAPSHOT_STEPS and of their last KEEP
# evaluations; after training the mean of those last weights replaces the kept checkpoint when it
# translates the validation split better (models.average), and the steps SHIP_STEPS are reduced
# to the snapshots the scrubber replays (models.snapshots).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
MINUTES=${MINUTES:-"transformer=130 lstm-additive=62 lstm-dot=52 lstm=55 rnn=39"}
DEVICE=${DEVICE:-auto}
SNAPSHOTS=${SNAPSHOTS:-"transformer lstm-additive"}
SNAPSHOT_STEPS=${SNAPSHOT_STEPS:-50,150,300,600,1000}
SHIP_STEPS=${SHIP_STEPS:-150,300,600}
KEEP=${KEEP:-6}
for entry in $MINUTES; do
  name=${entry%%=*}; minutes=${entry#*=}
  extra=()
  if [[ " $SNAPSHOTS " == *" $name "* ]]; then extra=(--snapshots "$SNAPSHOT_STEPS" --keep "$KEEP"); fi
  if [ "${FRESH:-0}" = 1 ]; then rm -rf "checkpoints/$name"/train_state.* "checkpoints/$name"/{snapshots-fp32,averaging}; fi
  echo "== $name: $minutes minutes ($(date -u +%H:%M:%S))"
  "$PY" -m models.train --model "$name" --minutes "$minutes" --resume --device "$DEVICE" "${extra[@]}"
  if [ ${#extra[@]} -gt 0 ]; then "$PY" -m models.average --model "$name" --last "$KEEP"; fi
  "$PY" -m models.evaluate --model "$name"
  if [ ${#extra[@]} -gt 0 ]; then "$PY" -m models.snapshots --model "$name" --steps "$SHIP_STEPS"; fi
done
echo "== done ($(date -u +%H:%M:%S))"
