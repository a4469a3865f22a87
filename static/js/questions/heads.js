// The heads chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchHeads } from "../chapters/heads-lab.js";
import { amongRanges, argmax, power } from "./choices.js";
import { t } from "../i18n.js";

const heads = {
  chapter: "heads",
  measure: (text, { catalog }, signal) => fetchHeads(text, catalog.withHeads[0]?.name ?? null, [], signal),
  pose(answer) {
    const cross = answer.contributions.filter((c) => c.kind === "cross");
    if (cross.length < 2) return null;
    const name = (c) => t("heads.question.head", { layer: c.layer + 1, head: c.head + 1 });
    const sharpest = cross[argmax(cross.map((c) => c.max_weight))];
    const strongest = cross[argmax(cross.map((c) => c.mean))];
    // what the sharpest head adds as a share of the most: 1 when it is itself the one that adds most
    const measured = sharpest.mean / strongest.mean;
    const { choices, right, close } = amongRanges(sharpest === strongest ? 1 : Math.min(measured, 0.999), [0.5, 1], "heads.question.choice");
    return {
      prompt: t("heads.question.prompt", { model: answer.model, count: cross.length, sharpest: name(sharpest), weight: power(sharpest.max_weight) }),
      choices, right, close, measured,
      says: (id) => t("heads.question.says", {
        guess: choices[Number(id)].label, sharpest: name(sharpest), guessValue: power(sharpest.mean), share: power(measured),
        answer: name(strongest), value: power(strongest.mean),
      }),
    };
  },
};

export default heads;
