// The gradients chapter's prose, from the numbers the server just measured: every figure and every "more" or
// "less" in the text is computed here from the API's answers, never written in advance. The
// page's test reads these same facts back (data-fact) and checks them against the API. A helper of
// chapters/gradients.js.
import { compare, fmt } from "./facts.js";
import { t } from "./i18n.js";

/** The curve of `model` with `weights` ("trained" | "initialized"), or null. */
export function curveOf(answer, model, weights) {
  return ((answer && answer.curves) || []).find((c) => c.model === model && (c.weights || "trained") === weights) || null;
}

/** norm at `distance` over norm at distance 0: the share of the gradient left that far back. */
export function reach(curve, distance) {
  if (!curve || distance >= curve.norm.length || !(curve.norm[0] > 0)) return null;
  return curve.norm[distance] / curve.norm[0];
}

const median = (values) => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)] : null;
};

/**
 * The facts the chapter's story states, each a string for the page. `answer`: POST /api/gradients
 * with initialized and factors; `catalog`: the page's Catalog (metrics). Models are picked by
 * capability: the plain recurrent model (no gates) and the gated one.
 */
export function storyFacts(answer, catalog) {
  const models = [...new Set(((answer && answer.curves) || []).map((c) => c.model))];
  const plain = models.find((name) => catalog.info(name) && !catalog.info(name).gates) || null;
  const gated = models.find((name) => catalog.info(name) && catalog.info(name).gates) || null;
  const length = answer && answer.tokens ? answer.tokens.length : 0;
  const distance = Math.min(40, Math.max(length - 1, 0));
  const facts = { length: String(length), distance: String(distance), plain: plain || "–", gated: gated || "–" };
  for (const [role, name] of [["plain", plain], ["gated", gated]]) {
    const trained = curveOf(answer, name, "trained");
    const untrained = curveOf(answer, name, "initialized");
    const now = reach(trained, distance);
    const before = reach(untrained, distance);
    facts[`${role}-trained`] = fmt(now);
    facts[`${role}-initialized`] = fmt(before);
    facts[`${role}-direction`] = compare(now, before);
    for (const [weights, curve] of [["trained", trained], ["initialized", untrained]]) {
      const factor = median((curve && curve.step_factor) || []);
      facts[`${role}-factor-${weights}`] = fmt(factor);
      facts[`${role}-side-${weights}`] = side(factor);
      facts[`${role}-shrink-${weights}`] = fmt(median((curve && curve.shrink) || []));
    }
    const bucket = bucketBleu(catalog, name, catalog.buckets.at(-1)); // the longest sentences
    facts[`${role}-bleu-long`] = fmt(bucket);
  }
  const forget = curveOf(answer, gated, "trained");
  facts["gated-forget"] = fmt(median((forget && forget.forget_mean) || []));
  return facts;
}

/** What a median step factor means for the gradient, said from the number. */
function side(factor) {
  if (factor === null) return "–";
  return t(factor < 1 ? "gradients.vanishing.below-one" : "gradients.vanishing.above-one");
}

function bucketBleu(catalog, name, bucket) {
  const info = name && catalog.info(name);
  const rows = (info && info.metrics && info.metrics.bleu_by_length) || [];
  const row = rows.find((r) => r.bucket === bucket);
  return row ? row.bleu : null;
}
