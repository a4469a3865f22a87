// One question per chapter, asked before the chapter shows its measurement, each in a module of its
// own, static/js/questions/<slug>.js, whose default export is the question; questions.js imports the
// one of each chapter whose section is posed (`data-posed`). This module holds what they share: how
// choices are made from a measurement and how a question writes its number. A question is never a
// key written in advance: `measure` asks the chapter's own endpoint (its view's `fetch<Name>`, the same request as
// the view where it can, so the server's cache answers the view after) about the reader's sentence, and
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
import { figure, t } from "../i18n.js";

/** A piece as a reader writes it: the tokenizer's word mark dropped. */
export const piece = (token) => token.replace(/^▁/, "") || token;

export const argmax = (xs) => xs.reduce((best, x, i) => (x > xs[best] ? i : best), 0);

/** Index of the largest value other than at `skip`; -1 when there is none. */
export function runnerUp(xs, skip) {
  let best = -1;
  xs.forEach((x, i) => { if (i !== skip && (best < 0 || x > xs[best])) best = i; });
  return best;
}

/** Choices among `labels` (sentence pieces), right = the largest of `values`, close = the second. */
export function amongPieces(labels, values) {
  const right = argmax(values);
  const second = runnerUp(values, right);
  return {
    choices: labels.map((label, i) => ({ id: String(i), label: piece(label), lang: "fr" })),
    right: String(right),
    close: new Set(second < 0 ? [] : [String(second)]),
  };
}

/** The ids and labels of ranges split by `edges`: "0" (below the first) ... */
export const rangeChoices = (edges, prefix) => Array.from({ length: edges.length + 1 }, (_, i) => ({ id: String(i), label: t(`${prefix}.${i}`) }));

/** Choices as ranges: `edges` ascending split the line into edges.length + 1 ranges, ids "0"...; the neighbours are close. */
export function amongRanges(value, edges, prefix) {
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
