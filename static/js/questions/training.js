// The training chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchCurves } from "../chapters/training.js";
import { amongRanges, power } from "./choices.js";
import { t } from "../i18n.js";

/** Shares of the fall of the validation loss made by halfway through training: the range edges. */
const HALFWAY_EDGES = [0.5, 0.75, 0.9];

/**
 * A training log's validation loss at its first and last evaluations and, read off the straight line
 * between the two evaluations around it, at the minute halfway between them; null without two.
 */
function halfway(curve) {
  const points = curve.points.filter((p) => Number.isFinite(p.seconds) && Number.isFinite(p.valid_loss));
  if (points.length < 2) return null;
  const [first, last] = [points[0], points.at(-1)];
  const half = (first.seconds + last.seconds) / 2;
  const after = points.findIndex((p) => p.seconds >= half);
  const [a, b] = [points[Math.max(after - 1, 0)], points[after]];
  const middle = b.seconds === a.seconds ? b.valid_loss : a.valid_loss + ((half - a.seconds) / (b.seconds - a.seconds)) * (b.valid_loss - a.valid_loss);
  return { first, last, half, middle };
}

const training = {
  chapter: "training",
  // the training logs do not change with the sentence (the record's "fixed")
  measure: (text, ctx, signal) => fetchCurves(signal),
  pose(answer) {
    // the model trained longest: its log has the most to show of how the loss falls
    const logs = answer.map((c) => ({ model: c.model, at: halfway(c) })).filter((c) => c.at && c.at.first.valid_loss > c.at.last.valid_loss);
    if (!logs.length) return null;
    const { model, at } = logs.reduce((a, b) => (b.at.last.seconds > a.at.last.seconds ? b : a));
    const measured = (at.first.valid_loss - at.middle) / (at.first.valid_loss - at.last.valid_loss);
    const { choices, right, close } = amongRanges(measured, HALFWAY_EDGES, "training.question.choice");
    const minutes = (seconds) => power(seconds / 60);
    return {
      prompt: t("training.question.prompt", { model, first: minutes(at.first.seconds), last: minutes(at.last.seconds), half: minutes(at.half) }),
      choices, right, close, measured,
      says: (id) => t("training.question.says", {
        guess: choices[Number(id)].label, model, start: power(at.first.valid_loss), end: power(at.last.valid_loss),
        half: minutes(at.half), middle: power(at.middle), value: power(measured),
      }),
    };
  },
};

export default training;
