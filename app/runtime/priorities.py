"""The model thread's queue priorities, most urgent first, and how long each lets more urgent work
go ahead of it (app/runtime/worker.py, "Interactive work first")."""

INTERACTIVE, ORDINARY, EXPERIMENT = 0, 1, 2
# How long a queued turn of each priority lets later, more urgent turns go first: it runs before any
# turn queued more than this after it. Without a bound, steady typing (a compare always queued)
# kept a chapter's request, or the gradients chapter's experiment, from ever starting.
PATIENCE_S = {INTERACTIVE: 0.0, ORDINARY: 0.25, EXPERIMENT: 1.0}
# In a long job's pauses, more urgent work gets this many seconds for each second the job has run
# (worker.py, `pause`): half the model thread each. The readers' stepped decoding also goes on beside
# the job's steps, on a side lane (`_step_beside`), so an experiment is not slowed by their pauses alone.
URGENT_SHARE = 1.0
