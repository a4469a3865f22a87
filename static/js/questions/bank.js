// One question per chapter, asked before the chapter shows its measurement. A question is never a
// key written in advance: `measure` asks the chapter's own endpoint (api.js, the same request as its
// view where it can, so the server's cache answers the view after) about the reader's sentence, and
// `pose` turns that answer into the choices, the right one, the near misses and the number to reveal.
//
//   chapter                      the slug of the chapter it precedes (app/chapters.py)
//   measure(text, ctx, signal)   -> Promise of the answer; ctx: {catalog, page}
//   pose(answer, ctx)            -> {prompt, choices: [{id, label, lang?}], right, close: Set of ids,
//                                   measured (the key number), says(id) (the guess against the measure)}
//                                   or null when this sentence gives nothing to ask
//   ask(ctx)                     a question measured once the reader has guessed: -> {prompt, choices},
//                                shown first; `measure` runs after the guess
//
// How a question is posed is its chapter's record's `question` (app/chapters.py), which the page writes
// on the chapter's section (`data-posed`): "sentence" (measured on the reader's sentence), "fixed" (the
// same for every sentence: posed once) or "later" (the same for every sentence, and measured once the
// reader has guessed, with `ask`).
import { fetchCurves } from "../chapters/training.js";
import { fetchGradients } from "../chapters/gradients.js";
import { fetchHeads } from "../chapters/heads-lab.js";
import { fetchOrder } from "../chapters/order.js";
import { fetchPredict } from "../chapters/predict.js";
import { fetchRecurrence } from "../chapters/recurrence.js";
import { fetchScaling } from "../chapters/scaling.js";
import { fetchScores } from "../chapters/scores.js";
import { fetchTiming } from "../chapters/timing.js";
import { figure, t } from "../i18n.js";

/** A piece as a reader writes it: the tokenizer's word mark dropped. */
export const piece = (token) => token.replace(/^▁/, "") || token;

const argmax = (xs) => xs.reduce((best, x, i) => (x > xs[best] ? i : best), 0);

/** Index of the largest value other than at `skip`; -1 when there is none. */
function runnerUp(xs, skip) {
  let best = -1;
  xs.forEach((x, i) => { if (i !== skip && (best < 0 || x > xs[best])) best = i; });
  return best;
}

/** Choices among `labels` (sentence pieces), right = the largest of `values`, close = the second. */
function amongPieces(labels, values) {
  const right = argmax(values);
  const second = runnerUp(values, right);
  return {
    choices: labels.map((label, i) => ({ id: String(i), label: piece(label), lang: "fr" })),
    right: String(right),
    close: new Set(second < 0 ? [] : [String(second)]),
  };
}

/** The ids and labels of ranges split by `edges`: "0" (below the first) ... */
const rangeChoices = (edges, prefix) => Array.from({ length: edges.length + 1 }, (_, i) => ({ id: String(i), label: t(`${prefix}.${i}`) }));

/** Choices as ranges: `edges` ascending split the line into edges.length + 1 ranges, ids "0"...; the neighbours are close. */
function amongRanges(value, edges, prefix) {
  let index = edges.findIndex((edge) => value < edge);
  if (index < 0) index = edges.length;
  const choices = rangeChoices(edges, prefix);
  const ids = choices.map((c) => c.id);
  return {
    choices,
    right: String(index),
    close: new Set([String(index - 1), String(index + 1)].filter((id) => ids.includes(id))),
  };
}

/** A question's number: three significant digits between 0.01 and 1000, else a power of ten (the page's `figure`). */
export const power = (x) => figure(x, { digits: 3, small: 0.01, large: 1000, zeros: false });

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

const attention = {
  chapter: "attention",
  // the first answer gives the translation; the question is about its middle word (punctuation
  // has nothing to look for)
  async measure(text, ctx, signal) {
    const first = await fetchScores(text, null, 0, 1, signal);
    const targets = first.target_tokens;
    const words = targets.map((token, i) => (/\p{L}/u.test(token) ? i : -1)).filter((i) => i >= 0);
    const row = words.length ? words[Math.floor(words.length / 2)] : Math.floor(targets.length / 2);
    return row === 0 ? first : fetchScores(text, first.model, row, 1, signal);
  },
  pose(answer) {
    if (answer.source_tokens.length < 2) return null;
    const { choices, right, close } = amongPieces(answer.source_tokens, answer.weights);
    const best = Number(right);
    return {
      prompt: t("attention.question.prompt", { model: answer.model, word: piece(answer.query_token), translation: answer.translation }),
      choices, right, close,
      measured: answer.weights[best],
      says: (id) => t("attention.question.says", {
        guess: choices[Number(id)].label, guessValue: power(answer.weights[Number(id)]),
        answer: choices[best].label, value: power(answer.weights[best]), word: piece(answer.query_token),
      }),
    };
  },
};

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

const SATURATION_EDGES = [0.5, 0.8, 0.95];

const scaling = {
  chapter: "scaling",
  measure: (text, ctx, signal) => fetchScaling(text, signal),
  pose(answer) {
    const encoder = answer.summary && answer.summary.encoder;
    if (!encoder) return null;
    const measured = encoder.unscaled_max_weight;
    const { choices, right, close } = amongRanges(measured, SATURATION_EDGES, "scaling.question.choice");
    return {
      prompt: t("scaling.question.prompt", { model: answer.model, dk: answer.d_k }),
      choices, right, close, measured,
      says: (id) => t("scaling.question.says", {
        guess: choices[Number(id)].label, value: power(measured), scaled: power(encoder.max_weight),
      }),
    };
  },
};

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

/** Shares of the shipped BLEU kept with every feed-forward sub-layer off: under a quarter, to three quarters, above. */
const KEPT_EDGES = [0.25, 0.75];

const room = {
  chapter: "room",
  // the shipped evaluation does not change with the sentence (the record's "fixed")
  // the Transformer scored with its sub-layers switched off (GET /api/models' `sublayers`): no request
  measure: () => Promise.resolve(null),
  pose(_, { catalog }) {
    const model = catalog.withHeads[0];
    const scores = model?.sublayers || [];
    const all = scores.find((s) => s.off === null);
    const off = scores.find((s) => s.off === "feed_forward");
    if (!all || !off || !(all.bleu > 0)) return null;
    const kept = off.bleu / all.bleu;
    const { choices, right, close } = amongRanges(kept, KEPT_EDGES, "room.question.choice");
    return {
      prompt: t("room.question.prompt", { model: model.name, bleu: power(all.bleu) }),
      choices, right, close, measured: off.bleu,
      says: (id) => t("room.question.says", { guess: choices[Number(id)].label, value: power(off.bleu), all: power(all.bleu) }),
    };
  },
};

export const QUESTIONS = [training, recurrence, gradients, bottleneck, attention, timing, scaling, order, heads, room, predict, point];
