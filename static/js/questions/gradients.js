// The gradients chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchGradients } from "../chapters/gradients.js";
import { amongRanges, power } from "./choices.js";
import { t } from "../i18n.js";

/** Order-of-magnitude ranges of a kept share of the gradient, as powers of ten. */
const SHARE_EDGES = [-10, -6, -3, -1];

const gradients = {
  chapter: "gradients",
  measure: (text, ctx, signal) => fetchGradients(text, ctx.page.length, signal),
  pose(answer, { catalog }) {
    const plain = catalog.plainRecurrent;
    const curve = (weights) => answer.curves.find((c) => c.model === plain?.name && c.weights === weights);
    const [start, trained] = [curve("initialized"), curve("trained")];
    if (!start || start.norm.length < 2 || !(start.norm[0] > 0)) return null;
    const share = (c) => c.norm[c.norm.length - 1] / c.norm[0];
    const measured = share(start);
    const steps = start.distance[start.distance.length - 1];
    const { choices, right, close } = amongRanges(Math.log10(Math.max(measured, 1e-300)), SHARE_EDGES, "gradients.question.choice");
    return {
      prompt: t("gradients.question.prompt", { model: plain.name, count: steps, length: answer.tokens.length }),
      choices, right, close, measured,
      says: (id) => t("gradients.question.says", {
        guess: choices[Number(id)].label, value: power(measured), trained: trained ? power(share(trained)) : "—",
        count: steps,
      }),
    };
  },
};

export default gradients;
