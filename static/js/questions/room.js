// The room chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { amongRanges, power } from "./choices.js";
import { t } from "../i18n.js";

/** Shares of the shipped BLEU kept with every feed-forward sub-layer off: under a quarter, to three quarters, above. */
const KEPT_EDGES = [0.25, 0.75];

const room = {
  chapter: "room",
  // the shipped evaluation does not change with the sentence (the record's "fixed")
  // the Transformer scored with its sub-layers switched off (GET /api/models' `sublayers`): no request
  measure: () => Promise.resolve(null),
  pose(_, { catalog }) {
    const model = catalog.withHeads[0];
    const scores = model?.sublayers || [];
    const all = scores.find((s) => s.off === null);
    const off = scores.find((s) => s.off === "feed_forward");
    if (!all || !off || !(all.bleu > 0)) return null;
    const kept = off.bleu / all.bleu;
    const { choices, right, close } = amongRanges(kept, KEPT_EDGES, "room.question.choice");
    return {
      prompt: t("room.question.prompt", { model: model.name, bleu: power(all.bleu) }),
      choices, right, close, measured: off.bleu,
      says: (id) => t("room.question.says", { guess: choices[Number(id)].label, value: power(off.bleu), all: power(all.bleu) }),
    };
  },
};

export default room;
