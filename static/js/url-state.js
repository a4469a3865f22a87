// What a reader can share: the page's state in the query string. Keys: lang (the page's language,
// en or fr: a shared link opens in the language it was copied in), text, glance (the model whose
// translation the first screen shows), model (the selected card), kind (of attention in the heads view), head ("L.H", counted from 1), len (the gradient
// experiment's input length), factor (its per-step view), filler and lag (the long-lag
// experiment); ch (the chapter in view, its number in the story), curve and x (chapter 1's
// quantity and axis), show (chapter 1's one model, empty: all), step (chapter 2's piece, from 0),
// row and temp (chapter 5's output word, from 0, and temperature), lhead (chapter 5's head of the one
// line, from 0), tlen (chapter 6's lengths,
// comma-separated; absent: the server's), shuffle and ohead (chapter 8's seed and head, from 0),
// off (chapter 9's heads switched off, "kind.L.H;..." counted from 1), rollout (1: shown) and sel
// (the source pieces whose attention is summed, from 0, comma-separated); pmodel, beam and prefix
// (chapter 10's model, beam size 1-8, forced pieces separated by spaces); astep and hstep (the
// training step replayed in chapters 5 and 9; absent: the shipped weights); tt, tl, tc, tseed and
// tsteps (chapter 4's live run: task, length, contestants comma-separated, seed, steps); tour (a
// teacher's chapters, in order, comma-separated) and ask (1: questions on, questions.js). A value
// the server's limits or catalogue do not allow is ignored.

/** "kind.layer.head" (counted from 1) <-> {kind, layer, head} (from 0): the URL's `off`. */
export const offKey = (h) => `${h.kind}.${h.layer + 1}.${h.head + 1}`;
export function parseOff(value) {
  return (value || "").split(";").map((s) => /^(encoder|decoder|cross)\.(\d+)\.(\d+)$/.exec(s)).filter(Boolean)
    .map((m) => ({ kind: m[1], layer: Number(m[2]) - 1, head: Number(m[3]) - 1 })).filter((h) => h.layer >= 0 && h.head >= 0);
}

/** `tour`: chapter numbers that exist on the page, each once, in the link's order. */
const parseTour = (value, chapters) => [...new Set((value || "").split(",").map((s) => s.trim()).filter((s) => chapters.includes(s)))];

/** Chapter 5's temperature slider: its ends. */
export const TEMPERATURES = [0.05, 20];

/** A count from 0 (a step, a row), or 0 when `value` is not one. */
const count = (value) => (/^\d+$/.test(value || "") ? Number(value) : 0);

export class UrlState {
  /** The state `search` (location.search) gives, checked against `catalog`; `lang`: the page's language. */
  constructor(search, catalog, lang) {
    const q = new URLSearchParams(search);
    this.lang = lang;
    const longest = catalog.limits.max_gradient_length;
    const opening = catalog.defaults; // the server's (app/defaults.py): its answers are computed ahead
    this.text = q.has("text") ? q.get("text") : opening.text;
    this.model = catalog.info(q.get("model")) ? q.get("model") : defaultModel(catalog);
    this.glance = catalog.info(q.get("glance")) ? q.get("glance") : defaultModel(catalog);
    this.kind = catalog.kinds.includes(q.get("kind")) ? q.get("kind") : "cross";
    [this.layer, this.head] = [0, 0];
    const head = /^(\d+)\.(\d+)$/.exec(q.get("head") || "");
    const [layer, index] = head ? [Number(head[1]) - 1, Number(head[2]) - 1] : [-1, -1];
    if (catalog.withHeads.some((m) => layer >= 0 && layer < m.layers && index >= 0 && index < m.heads)) {
      [this.layer, this.head] = [layer, index];
    }
    const length = Number(q.get("len"));
    this.length = Number.isInteger(length) && length >= 1 && length <= longest ? length : opening.length;
    this.factor = q.get("factor") || "shrink"; // checked against its views by chapters/gradients.js
    // checked against the long-lag results once they arrive (chapters/long-lag.js)
    this.filler = q.get("filler") || "blank";
    this.lag = Number(q.get("lag")) || null;
    const chapters = [...document.querySelectorAll("section[data-chapter]")].map((s) => s.dataset.chapter);
    this.ch = chapters.includes(q.get("ch")) ? q.get("ch") : null;
    this.tour = parseTour(q.get("tour"), chapters);
    this.ask = q.get("ask") === "1";
    this.curve = q.get("curve") === "bleu" ? "bleu" : "loss";
    this.x = q.get("x") === "minutes" ? "minutes" : "step";
    this.show = catalog.info(q.get("show")) ? q.get("show") : "";
    this.step = count(q.get("step"));
    this.row = count(q.get("row"));
    const temp = Number(q.get("temp"));
    this.temp = q.has("temp") && temp >= TEMPERATURES[0] && temp <= TEMPERATURES[1] ? temp : 1;
    const lengths = (q.get("tlen") || "").split(",").map(Number);
    this.shuffle = count(q.get("shuffle")) || opening.seed;
    this.ohead = count(q.get("ohead"));
    this.lhead = count(q.get("lhead"));
    const fits = (h) => catalog.withHeads.some((m) => h.layer < m.layers && h.head < m.heads);
    this.off = parseOff(q.get("off")).filter(fits);
    this.rollout = q.get("rollout") === "1";
    this.sel = (q.get("sel") || "").split(",").filter((s) => /^\d+$/.test(s)).map(Number);
    this.pmodel = catalog.info(q.get("pmodel")) ? q.get("pmodel") : null;
    const beam = Number(q.get("beam"));
    this.beam = Number.isInteger(beam) && beam >= 1 && beam <= catalog.limits.max_beam_size ? beam : 1;
    this.prefix = (q.get("prefix") || "").split(" ").filter(Boolean);
    this.astep = q.has("astep") ? count(q.get("astep")) : null; // checked against the timeline (replay.js)
    this.hstep = q.has("hstep") ? count(q.get("hstep")) : null;
    // chapter 4's live run: checked against GET /api/train's limits by chapters/live.js
    this.tt = q.get("tt");
    this.tl = q.has("tl") ? count(q.get("tl")) : null;
    this.tc = (q.get("tc") || "").split(",").filter(Boolean);
    this.tseed = q.has("tseed") ? count(q.get("tseed")) : null;
    this.tsteps = q.has("tsteps") ? count(q.get("tsteps")) : null;
    const timed = lengths.length >= 2 && lengths.length <= catalog.limits.max_timing_lengths;
    this.tlen = timed && lengths.every((n) => Number.isInteger(n) && n >= 1 && n <= catalog.limits.max_timing_length) ? lengths : null;
  }

  /** Change some keys and write them to the URL (in place: typing would flood the back button). */
  set(changes) {
    Object.assign(this, changes);
    this.write();
  }

  /**
   * Like `set`, with the URL written once the browser is idle (within half a second): a new text's
   * views draw first. history.replaceState is a large share of the time between the pause in typing
   * and the first model drawn (Chromium, bench/bench_page.py); the address only needs to be right
   * by the time someone copies it.
   */
  setSoon(changes) {
    Object.assign(this, changes);
    this.pending ??= requestIdleCallback(() => this.write(), { timeout: 500 });
  }

  write() {
    if (this.pending !== undefined) cancelIdleCallback(this.pending);
    this.pending = undefined;
    const q = new URLSearchParams({
      lang: this.lang, text: this.text, glance: this.glance || "", model: this.model || "", kind: this.kind, head: `${this.layer + 1}.${this.head + 1}`,
      len: String(this.length), factor: this.factor, filler: this.filler, lag: String(this.lag || ""),
      ch: this.ch || "", curve: this.curve, x: this.x, show: this.show, step: String(this.step),
      row: String(this.row), temp: String(this.temp), lhead: String(this.lhead), shuffle: String(this.shuffle), ohead: String(this.ohead),
      off: this.off.map(offKey).join(";"), rollout: this.rollout ? "1" : "", sel: this.sel.join(","),
      pmodel: this.pmodel || "", beam: String(this.beam), prefix: this.prefix.join(" "),
    });
    if (this.tlen) q.set("tlen", this.tlen.join(","));
    for (const key of ["astep", "hstep"]) if (this[key] !== null) q.set(key, String(this[key]));
    if (this.tt) q.set("tt", this.tt);
    for (const key of ["tl", "tseed", "tsteps"]) if (this[key] !== null) q.set(key, String(this[key]));
    if (this.tc.length) q.set("tc", this.tc.join(","));
    if (this.tour.length) q.set("tour", this.tour.join(","));
    if (this.ask) q.set("ask", "1");
    history.replaceState(null, "", `${location.pathname}?${q}`);
  }
}

/** The model the story ends with: the first with heads to explore, else the last one. */
function defaultModel(catalog) {
  const chosen = catalog.withHeads[0] || catalog.models[catalog.models.length - 1];
  return chosen ? chosen.name : null;
}
