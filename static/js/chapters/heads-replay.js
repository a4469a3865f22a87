// The heads chapter, watching the heads learn: the training of a model with heads replayed on the typed
// sentence, step by step, a cross head at a time (replay.js; the step in the URL's `hstep`).
import { replayView } from "../replay.js";

export const { chapter, title, figures, asks, state, mount, keys, panels, ask, draw, failure, describe, rows } =
  replayView({ chapter: "heads", container: "heads-scrubber", key: "hstep", candidates: (catalog) => catalog.withHeads });
