// The prediction chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchPredict } from "../chapters/predict.js";
import { amongRanges, piece, power } from "./choices.js";
import { t } from "../i18n.js";

/** The label smoothing model `name` was trained with (GET /api/models' `recipe`), 0 when not recorded. */
const smoothing = (catalog, name) => catalog.models.find((m) => m.name === name)?.recipe?.label_smoothing ?? 0;

/** The probability the decoder gives its likeliest next piece. */
const CONFIDENCE_EDGES = [0.5, 0.8, 0.9];

const predict = {
  chapter: "prediction",
  measure: (text, { catalog, page }, signal) => fetchPredict(text, page.pmodel, [], catalog.defaults.top_k, 1, signal),
  pose(answer, { catalog }) {
    const steps = answer.steps.filter((s) => s.top.length >= 2);
    if (!steps.length) return null;
    const at = answer.steps.indexOf(steps[Math.floor((steps.length - 1) / 2)]);
    const step = answer.steps[at];
    const written = answer.target_tokens.slice(0, at).join("").replace(/▁/g, " ").trim();
    const [first, second] = step.top;
    const measured = first.probability;
    const { choices, right, close } = amongRanges(measured, CONFIDENCE_EDGES, "prediction.question.choice");
    return {
      // label smoothing's target for the correct piece (chapter 1): 1 less the share spread over the others
      prompt: t(written ? "prediction.question.prompt" : "prediction.question.first", { model: answer.model, written, target: power(1 - smoothing(catalog, answer.model)) }),
      choices, right, close, measured,
      says: (id) => t("prediction.question.says", {
        guess: choices[Number(id)].label, answer: piece(first.token), value: power(measured),
        second: piece(second.token), secondValue: power(second.probability),
      }),
    };
  },
};

export default predict;
