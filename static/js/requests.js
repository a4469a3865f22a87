// The request lifecycle, one for every chapter view (static/js/chapters/*.js, each of one shape:
// contents.js). Each edit asks the server at once, in one request (speculate.js), about the models
// whose views are on or near the screen (the first screen's translation among them); after a pause
// in typing a round begins: every view is asked about the new text once its first panel is on or
// near the screen (lazy.js; the per-model views from that one request, or one new request for the
// models of the views that came near later),
// and the round before is over: its requests are aborted and an answer that still arrives for it is
// never shown, so the latest text always wins. Within a view, a newer ask (a control moved, a button
// pressed) aborts the older one. While an ask runs, its panels are marked `is-busy` (a figure keeps
// its final size, and until first drawn its placeholder: app.css); a failure is said on the view's
// panels in the view's words, and a 429 or 503 that names a Retry-After is asked again after that
// many seconds, which the panel says.
import { ApiError, explain, isAbort, waitBeforeRetry } from "./api.js";
import { chapterRoot, partsOf } from "./dom.js";
import { t } from "./i18n.js";
import { isNear, whenNear } from "./lazy.js";
import { showEmpty } from "./plots.js";
import { Speculation, unlessAborted } from "./speculate.js";
import * as store from "./store.js";
import { liveRegion, showTwins } from "./twins.js";

window.attentionLab = { lastUpdate: null };

const RETRIES = 3; // asks after a Retry-After, at most; then the failure stays said
const drawn = new WeakMap(); // view -> Map key -> the answer it last drew
const failed = new WeakMap(); // view -> Map key -> {error, wait}: the failure it says now, if any

/** The answer `view` last drew for `key` (what its describe and rows speak of); undefined before any. */
export const lastAnswer = (view, key = null) => drawn.get(view)?.get(key);

/** "The {what} could not be shown ({why})."; `missing`: the reason given for a 404 (null: the server's own). */
export function couldNot(what, error, missing = t("failure.no-model")) {
  const why = error instanceof ApiError && error.status === 404 && missing ? missing : explain(error);
  return t("failure.could-not", { what, why });
}

/** How a per-model view says that model `name`'s answer for the text did not come. */
export function modelFailure(error, name) {
  const missing = error instanceof ApiError && error.status === 404;
  return missing ? t("failure.unavailable") : t("failure.model", { name, why: explain(error) });
}

/** A copy of `error` that says which model's answer it ended (the status line names the model). */
function ofModel(name, error) {
  const copy = error instanceof ApiError ? new ApiError(error.status, error.message, error.body, error.retryAfter)
    : new Error(error && error.message);
  copy.model = name;
  return copy;
}

const isPlot = (element) => element.classList.contains("plot");

/** Say `message` on each panel: a figure shows it in place of its chart (once near), a text is replaced by it. */
function say(panels, message) {
  for (const panel of panels) {
    if (isPlot(panel)) whenNear(panel, () => showEmpty(panel, message));
    else {
      panel.textContent = message;
      panel.classList.add("is-missing");
    }
  }
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => {
    clearTimeout(timer);
    resolve();
  }, { once: true });
});

/** One view's asks about one key (a model's name, or null): each newer ask aborts the older. */
class Line {
  constructor(lab, view, key) {
    Object.assign(this, { lab, view, key });
    this.controller = null;
    this.timer = 0;
    this.busy = null; // the attempt whose panels are dimmed
  }

  /** Asked about each new text (typed or lazily), so a new round ends its asks. */
  get perText() {
    return this.view.asks === "typed" || this.view.asks === "text";
  }

  /** The text to ask about: the latest round's, trimmed except for the compare stream's views. */
  get text() {
    const text = this.lab.text;
    return text === null || this.view.asks === "typed" ? text : text.trim();
  }

  get anchor() {
    return this.view.panels(this.key)[0];
  }

  /**
   * A new round: ask once the first panel is on or near the screen, now or when it comes near; the
   * first outcome, or null when put off. A view with no panel for this key (a model it does not
   * show) asks nothing.
   */
  due(report) {
    if (!this.anchor || (this.view.wants && !this.view.wants(this.key))) return Promise.resolve(null);
    return whenNear(this.anchor, () => this.ask(report).first, () => this.ask()) ?? Promise.resolve(null);
  }

  /** The models this line's ask takes from the compare stream, were it asked now; none when its panel is far. */
  get models() {
    if (this.view.asks !== "typed" || !this.anchor || !isNear(this.anchor)) return [];
    if (this.view.models) return this.view.models(this.key);
    return this.key === null ? [] : [this.key];
  }

  /** Ask again with the latest text, now or (`lazy`) once near; resolves to the last outcome (retries included). */
  again(lazy) {
    if (this.perText && this.lab.text === null) return Promise.resolve(null); // the first round will ask
    if (!lazy || !this.anchor) return this.ask().last;
    return whenNear(this.anchor, () => this.ask().last) ?? Promise.resolve(null);
  }

  /** `again` once `ms` have passed without another call. */
  later(lazy, ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.again(lazy), ms);
  }

  stop() {
    this.controller?.abort();
  }

  /** Ask now, aborting the ask before; `report(line, outcome)` after each attempt. {first, last}: outcomes. */
  ask(report = () => {}) {
    this.controller?.abort();
    const controller = this.controller = new AbortController();
    const signal = this.perText ? AbortSignal.any([controller.signal, this.lab.signal]) : controller.signal;
    let first;
    const firstOutcome = new Promise((resolve) => { first = resolve; });
    const last = this.attempts(this.text, signal, (outcome) => {
      first(outcome);
      report(this, outcome);
    }).catch((error) => { // a fault of the page's own: seen, and no round waits for it forever
      console.error(error);
      first(null);
      return null;
    });
    return { first: firstOutcome, last };
  }

  async attempts(text, signal, report) {
    for (let tries = 0; ; tries += 1) {
      const outcome = await this.attempt(text, signal, tries < RETRIES);
      report(outcome);
      if (!outcome || outcome.wait === null) return outcome;
      await sleep(outcome.wait * 1000, signal);
      if (signal.aborted) return null;
    }
  }

  /** One request: its answer drawn, or its failure said. {label, why (null: drawn), wait}, or null when superseded. */
  async attempt(text, signal, mayRetry) {
    const { view, key } = this;
    const panels = view.panels(key);
    // an ask aborted (a newer round, Stop, a text overtaken by an empty one) undims its panels too,
    // unless a newer ask of this line has dimmed them since
    const mine = this.busy = {};
    const busy = (on) => {
      if (this.busy !== mine) return;
      for (const panel of panels) panel.classList.toggle("is-busy", on);
      if (!on) this.busy = null;
    };
    busy(true);
    try {
      const answer = await view.ask(text, signal, key);
      if (signal.aborted) return null;
      busy(false);
      for (const panel of panels) if (!isPlot(panel)) panel.classList.remove("is-missing");
      if (!drawn.has(view)) drawn.set(view, new Map());
      drawn.get(view).set(key, answer);
      failed.get(view)?.delete(key);
      await view.draw(answer, key);
      showTwins(view, key, answer); // its sentence and table, in step with what it drew
      return { label: this.label(), why: null, wait: null };
    } catch (error) {
      if (isAbort(error) || signal.aborted) return null;
      if (!(error instanceof ApiError)) console.error(error); // the page's own fault: let it be seen
      busy(false);
      const wait = mayRetry ? waitBeforeRetry(error) : null;
      if (!failed.has(view)) failed.set(view, new Map());
      failed.get(view).set(key, { error, wait });
      this.sayFailure(error, wait);
      return { label: this.label(error), why: explain(error), wait };
    } finally {
      busy(false);
    }
  }

  sayFailure(error, wait) {
    const message = this.view.failure(error, this.key);
    if (message !== null) say(this.view.panels(this.key), wait === null ? message : t("failure.asking-again", { message, seconds: wait }));
  }

  /** Show again what it showed (its last answer, or its failure), in the page's language now: no request. */
  async redraw() {
    const { view, key } = this;
    const failure = failed.get(view)?.get(key);
    if (failure) {
      this.sayFailure(failure.error, failure.wait);
      return;
    }
    const answer = lastAnswer(view, key);
    if (answer === undefined) return;
    await view.draw(answer, key);
    showTwins(view, key, answer);
  }

  /** Its name in the status line: the model whose answer did not come, else the view's (and its key). */
  label(error = null) {
    if (error && error.model) return error.model;
    if (this.view.name) return this.view.name(this.key);
    // the view's title in the page's words: its message "view.<title, dashed>" (contents.js)
    const title = t(`view.${this.view.title.replace(/[^a-z0-9]+/gi, "-")}`);
    return this.key === null ? title : t("status.view-of", { view: title, key: this.key });
  }
}

export class Lab {
  /** `compare(text, names, signal, supersede)`: one request for several models (api.compare). */
  constructor(compare) {
    this.speculation = new Speculation(compare);
    this.generation = 0;
    this.controller = new AbortController(); // aborts the latest round's requests
    this.lines = [];
    this.models = []; // every model, heaviest first
    this.batch = null; // the models asked for in this task, sent together at its end: {text, names, asked}
    this.text = null; // the text the views were last asked about
  }

  /**
   * Build each view on its chapter's section, in order, then ask those that ask once at the start.
   * `context`: what every view is built from ({catalog, page}).
   */
  mount(views, context) {
    // The server runs the models in the order asked: heaviest first (the catalogue lists the
    // story's models from the lightest), so the quick ones are those left when the page redraws.
    this.models = [...context.catalog.names].reverse();
    for (const view of views) {
      const root = view.root ? view.root() : chapterRoot(view.chapter); // the first screen's lives in the composer
      view.mount({
        ...context, root, part: partsOf(root),
        ask: (options) => this.again(view, options),
        stop: () => this.linesOf(view).forEach((line) => line.stop()),
        compared: (name, signal) => this.compared(name, signal),
        // a view that draws while its ask runs (a streamed run) has its figures said again as it draws
        shown: (answer, key = null) => showTwins(view, key, answer),
      });
      for (const key of view.keys()) this.lines.push(new Line(this, view, key));
    }
    for (const line of this.lines) if (line.view.asks === "start") line.ask();
  }

  linesOf(view, key) {
    return this.lines.filter((line) => line.view === view && (key === undefined || line.key === key));
  }

  /**
   * A view asks again (a control moved, a button pressed, a value it watches changed): `key`: only
   * that one; `lazy`: once its panel is near; `pause`: after that many ms without another call.
   * Resolves to the first failure among the outcomes, or null.
   */
  again(view, { key, lazy = false, pause = 0 } = {}) {
    const lines = this.linesOf(view, key);
    if (pause) {
      for (const line of lines) line.later(lazy, pause);
      return Promise.resolve(null);
    }
    return Promise.all(lines.map((line) => line.again(lazy))).then((outcomes) => outcomes.find((o) => o && o.why) || null);
  }

  /**
   * Ask about `text` (null: about nothing) now, before the pause, in one request: the answers of the
   * models the views on or near the screen show (the first screen's among them). A view far away
   * asks when it comes near.
   */
  ahead(text) {
    return this.speculation.ahead(text, this.onScreen());
  }

  /** The models the views on or near the screen take from the compare stream, heaviest first. */
  onScreen() {
    const wanted = new Set(this.lines.flatMap((line) => line.models));
    return this.models.filter((name) => wanted.has(name));
  }

  /**
   * Model `name`'s answer about the latest text: kept from the request that left at the keystroke,
   * or asked now; the models asked within one task (the panels of a chapter come near together)
   * go in one request.
   */
  compared(name, signal) {
    // a text no longer asked about (typing went on) is not asked again: its round is ending
    if (signal.aborted || this.text !== this.speculation.text) return Promise.reject(new DOMException("stale", "AbortError"));
    if (this.batch?.text !== this.text) this.batch = { text: this.text, names: new Set(), asked: null };
    const batch = this.batch;
    batch.asked ??= Promise.resolve().then(() => {
      if (this.batch === batch) this.batch = null;
      return this.speculation.ask(batch.text, this.models.filter((m) => batch.names.has(m)));
    });
    batch.names.add(name);
    const promise = batch.asked.then((answers) => answers.get(name));
    return unlessAborted(promise, signal).catch((error) => {
      throw isAbort(error) ? error : ofModel(name, error);
    });
  }

  /** Every view shows its last answer again (after a change of language): no new request. */
  async redraw() {
    for (const line of this.lines) {
      try {
        await line.redraw();
      } catch (error) {
        console.error(error); // one view's fault leaves the others redrawn
      }
    }
  }

  /** A new round: the one before is over. */
  begin() {
    this.controller.abort();
    this.controller = new AbortController();
    return new Round(this, ++this.generation, this.controller.signal);
  }

  /** The signal of the current round: aborted when the next one begins. */
  get signal() {
    return this.controller.signal;
  }
}

class Round {
  constructor(lab, generation, signal) {
    Object.assign(this, { lab, generation, signal });
    this.drawn = {}; // model name -> when its answer was drawn (performance.now())
  }

  /** False once a newer round has begun: its answers are not shown. */
  get current() {
    return this.generation === this.lab.generation && !this.signal.aborted;
  }

  /**
   * Ask every view about `text`. Resolves once every ask due now has its first outcome;
   * `onFailures(lines)` then, and again whenever a retry changes them while the round is current.
   */
  async update(text, onFailures) {
    const lab = this.lab;
    lab.text = text;
    store.set("text", text);
    lab.ahead(text); // asked while typing already (an example picked is asked here)
    const failures = new Map(); // label -> why
    let done = false;
    const tell = () => this.current && onFailures([...failures].map(([label, why]) => t("status.view-failed", { view: label, why })));
    const report = (line, outcome) => {
      if (!outcome || !this.current) return;
      if (outcome.why) failures.set(outcome.label, outcome.why);
      else failures.delete(outcome.label);
      if (!outcome.why && line.view.asks === "typed") this.drawn[line.key ?? line.view.title] = performance.now();
      if (done) tell();
    };
    await Promise.all(lab.lines.filter((line) => line.perText).map((line) => line.due(report)));
    done = true;
    tell();
  }

  /**
   * Every view shows `text`: say so for tests and benchmarks (`lab:updated` event,
   * `window.attentionLab.lastUpdate`, `data-updated` on <html>), after the next paint (the
   * frame, then the task that follows it).
   */
  announce(text) {
    requestAnimationFrame(() => setTimeout(() => {
      if (!this.current) return;
      const detail = { generation: this.generation, text, at: performance.now(), drawn: this.drawn };
      window.attentionLab.lastUpdate = detail;
      document.documentElement.dataset.updated = String(this.generation);
      window.dispatchEvent(new CustomEvent("lab:updated", { detail }));
      // one polite word per round, never one per figure: the views changed together
      if (text && text.trim()) liveRegion("round-said").textContent = t("status.updated", { text: text.trim() });
    }));
  }
}
