// The bottleneck chapter's question (app/chapters.py's record says how it is posed; the shape of a
// question: choices.js).
import { power } from "./choices.js";
import { t } from "../i18n.js";

const bottleneck = {
  chapter: "bottleneck",
  // the shipped evaluation, read from the catalogue the page already has: no request
  measure: (text, { catalog }) => Promise.resolve({ bucket: catalog.bucketOf(text), words: text.trim().split(/\s+/).filter(Boolean).length }),
  pose({ bucket, words }, { catalog }) {
    // the reader's length group against the other end of the range: the longest, or the shortest from there
    const [shortest, longest] = [catalog.buckets[0], catalog.buckets.at(-1)];
    const other = bucket === longest ? shortest : longest;
    const best = (withAttention, at) => {
      let found = null;
      for (const m of catalog.models) {
        if (Boolean(m.attention) !== withAttention) continue;
        const row = (m.metrics?.bleu_by_length || []).find((r) => r.bucket === at);
        if (row && (!found || row.bleu > found.bleu)) found = { name: m.name, bleu: row.bleu };
      }
      return found;
    };
    const lead = (at) => {
      const [without, within] = [best(false, at), best(true, at)];
      return without && within ? { without, within, gap: within.bleu - without.bleu } : null;
    };
    const [mine, theirs] = [lead(bucket), lead(other)];
    if (!mine || !theirs) return null;
    const choices = [bucket, other].map((b, i) => ({ id: String(i), label: t("bottleneck.question.choice", { bucket: b }) }));
    const right = mine.gap >= theirs.gap ? "0" : "1";
    const measured = right === "0" ? mine.gap : theirs.gap;
    return {
      prompt: t("bottleneck.question.prompt", { count: words }),
      choices, right, close: new Set(), measured,
      says: (id) => t("bottleneck.question.says", {
        guess: choices[Number(id)].label, bucket, other, mine: power(mine.gap), theirs: power(theirs.gap),
        without: mine.without.name, within: mine.within.name,
      }),
    };
  },
};

export default bottleneck;
