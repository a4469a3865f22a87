// What a reader can share: the page's state in the query string. Keys: text, model (the selected
// card), kind (of attention in the heads view), head ("L.H", counted from 1), len (the gradient
// experiment's input length), factor (its per-step view), filler and lag (the long-lag
// experiment). A value the server's limits or catalogue do not allow is ignored.
import { KINDS } from "./heads.js";
import { FACTORS } from "./step-factors.js";

const DEFAULT_TEXT = "Je mange du pain.";
const DEFAULT_LENGTH = 80;

export class UrlState {
  /** The state `search` (location.search) gives, checked against `catalog`. */
  constructor(search, catalog) {
    const q = new URLSearchParams(search);
    const longest = catalog.limits.max_gradient_length;
    this.text = q.has("text") ? q.get("text") : DEFAULT_TEXT;
    this.model = catalog.info(q.get("model")) ? q.get("model") : defaultModel(catalog);
    this.kind = KINDS.includes(q.get("kind")) ? q.get("kind") : "cross";
    [this.layer, this.head] = [0, 0];
    const head = /^(\d+)\.(\d+)$/.exec(q.get("head") || "");
    const [layer, index] = head ? [Number(head[1]) - 1, Number(head[2]) - 1] : [-1, -1];
    if (catalog.withHeads.some((m) => layer >= 0 && layer < m.layers && index >= 0 && index < m.heads)) {
      [this.layer, this.head] = [layer, index];
    }
    const length = Number(q.get("len"));
    this.length = Number.isInteger(length) && length >= 1 && length <= longest ? length : Math.min(DEFAULT_LENGTH, longest);
    this.factor = FACTORS[q.get("factor")] ? q.get("factor") : "shrink";
    // checked against the long-lag results once they arrive (long-lag.js)
    this.filler = q.get("filler") || "blank";
    this.lag = Number(q.get("lag")) || null;
  }

  /** Change some keys and write them to the URL (in place: typing would flood the back button). */
  set(changes) {
    Object.assign(this, changes);
    const q = new URLSearchParams({
      text: this.text, model: this.model || "", kind: this.kind, head: `${this.layer + 1}.${this.head + 1}`,
      len: String(this.length), factor: this.factor, filler: this.filler, lag: String(this.lag || ""),
    });
    history.replaceState(null, "", `${location.pathname}?${q}`);
  }
}

/** The model the story ends with: the first with heads to explore, else the last one. */
function defaultModel(catalog) {
  const chosen = catalog.withHeads[0] || catalog.models[catalog.models.length - 1];
  return chosen ? chosen.name : null;
}
