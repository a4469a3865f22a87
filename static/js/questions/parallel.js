// The parallel chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { fetchTiming } from "../chapters/timing.js";
import { amongRanges, power, rangeChoices } from "./choices.js";
import { t } from "../i18n.js";

/** How many times the recurrent encoder's growth in time is the parallel one's, shortest to longest length. */
const GROWTH_EDGES = [0.5, 2];

const timing = {
  chapter: "parallel",
  ask: () => ({ prompt: t("parallel.question.prompt"), choices: rangeChoices(GROWTH_EDGES, "parallel.question.choice") }),
  // one measurement runs at a time on the server (the chapter's own button may have started it): a
  // 429 is asked again after its Retry-After by the request lifecycle, like any view's
  measure: (text, { page }, signal) => fetchTiming(page.tlen, false, signal),
  pose(answer) {
    const { recurrent, parallel } = answer.roles;
    const measured = answer.growth[recurrent] / answer.growth[parallel];
    const { choices, right, close } = amongRanges(measured, GROWTH_EDGES, "parallel.question.choice");
    return {
      prompt: t("parallel.question.prompt"), choices, right, close, measured,
      says: (id) => t("parallel.question.says", {
        guess: choices[Number(id)].label, value: power(measured), device: answer.device, recurrent, parallel,
        shortest: Math.min(...answer.lengths), longest: Math.max(...answer.lengths),
        recurrentGrowth: power(answer.growth[recurrent]), parallelGrowth: power(answer.growth[parallel]),
      }),
    };
  },
};

export default timing;
