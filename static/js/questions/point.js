// The point chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchRecurrence } from "../chapters/recurrence.js";
import { t } from "../i18n.js";

const point = {
  chapter: "point",
  // the sentence's pieces (the recurrence's answer, already asked by chapter 2) against the Transformer's layers
  measure: (text, ctx, signal) => fetchRecurrence(text, signal),
  pose(answer, { catalog }) {
    const recurrent = catalog.plainRecurrent;
    const transformer = catalog.withHeads[0];
    if (!recurrent || !transformer || !answer.tokens.length) return null;
    const [count, layers] = [answer.tokens.length, transformer.layers];
    const names = { recurrent: recurrent.name, transformer: transformer.name };
    const choices = ["fewer", "same", "more"].map((id) => ({ id, label: t(`point.question.choice.${id}`, names) }));
    const right = layers < count ? "fewer" : layers === count ? "same" : "more";
    return {
      prompt: t("point.question.prompt", names),
      choices, right, close: new Set(right === "same" ? ["fewer", "more"] : ["same"]), measured: layers,
      says: (id) => t("point.question.says", { ...names, guess: choices.find((c) => c.id === id).label, count, value: layers }),
    };
  },
};

export default point;
