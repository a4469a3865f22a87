// The attention chapter, watching it learn where to look: the training of a recurrent model with attention
// replayed on the typed sentence, step by step (replay.js; the step in the URL's `astep`).
import { replayView } from "../replay.js";

export const { chapter, title, figures, asks, state, mount, keys, panels, ask, draw, failure, describe, rows } =
  replayView({ chapter: "attention", container: "alignment-scrubber", key: "astep", candidates: (catalog) => catalog.aligning });
