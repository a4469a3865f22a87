// The order chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchOrder } from "../chapters/order.js";
import { amongRanges, power } from "./choices.js";
import { t } from "../i18n.js";

/** Below the first: float rounding; below the second: a little; else a lot. */
const CHANGE_EDGES = [1e-3, 0.1];

const order = {
  chapter: "order",
  measure: (text, ctx, signal) => fetchOrder(text, ctx.page.shuffle, signal),
  pose(answer) {
    // the claim's own case, the encoding off; the claim's verdict stays hidden until the answer (questions.js)
    const off = answer.checks.pe_off.max_abs_difference;
    const { choices, right, close } = amongRanges(off, CHANGE_EDGES, "order.question.choice");
    return {
      prompt: t("order.question.prompt", { shuffled: answer.shuffled_text }),
      choices, right, close, measured: off,
      says: (id) => t("order.question.says", {
        guess: choices[Number(id)].label,
        value: power(off),
        on: power(answer.checks.pe_on.max_abs_difference),
      }),
    };
  },
};

export default order;
