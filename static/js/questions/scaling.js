// The scaling chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchScaling } from "../chapters/scaling.js";
import { amongRanges, power } from "./choices.js";
import { t } from "../i18n.js";

const SATURATION_EDGES = [0.5, 0.8, 0.95];

const scaling = {
  chapter: "scaling",
  measure: (text, ctx, signal) => fetchScaling(text, signal),
  pose(answer) {
    const encoder = answer.summary && answer.summary.encoder;
    if (!encoder) return null;
    const measured = encoder.unscaled_max_weight;
    const { choices, right, close } = amongRanges(measured, SATURATION_EDGES, "scaling.question.choice");
    return {
      prompt: t("scaling.question.prompt", { model: answer.model, dk: answer.d_k }),
      choices, right, close, measured,
      says: (id) => t("scaling.question.says", {
        guess: choices[Number(id)].label, value: power(measured), scaled: power(encoder.max_weight),
      }),
    };
  },
};

export default scaling;
