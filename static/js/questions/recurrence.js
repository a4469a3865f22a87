// The recurrence chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchRecurrence } from "../chapters/recurrence.js";
import { argmax, piece, power } from "./choices.js";
import { t } from "../i18n.js";

const recurrence = {
  chapter: "recurrence",
  measure: (text, ctx, signal) => fetchRecurrence(text, signal),
  pose(answer) {
    // the first piece's move is its whole state, set from zero; against it, the largest later move
    if (answer.tokens.length < 2) return null;
    const [first, ...later] = answer.change;
    const most = argmax(later);
    const choices = [
      { id: "first", label: t("recurrence.question.choice.first", { piece: piece(answer.tokens[0]) }) },
      { id: "later", label: t("recurrence.question.choice.later") },
    ];
    const right = first >= later[most] ? "first" : "later";
    return {
      prompt: t("recurrence.question.prompt", { model: answer.model, count: answer.tokens.length }),
      choices, right, close: new Set(),
      measured: right === "first" ? first : later[most],
      says: (id) => t("recurrence.question.says", {
        guess: choices.find((c) => c.id === id).label, first: piece(answer.tokens[0]), firstValue: power(first),
        later: piece(answer.tokens[most + 1]), laterValue: power(later[most]),
      }),
    };
  },
};

export default recurrence;
