// The request lifecycle. Each edit asks the server at once (speculate.js); after a pause in typing
// a new round of updates begins: the previous round's requests are aborted and any answer that
// still arrives for it is ignored, so the latest text always wins. Within a round, every other
// request of the page is a `Latest`: a newer ask of the same kind replaces the older one.
import { isAbort } from "./api.js";
import { Speculation, unlessAborted } from "./speculate.js";

window.attentionLab = { lastUpdate: null };

export class Requests {
  /** `compare(text, names, signal)`: one request for several models (api.compare). */
  constructor(compare) {
    this.speculation = new Speculation(compare);
    this.generation = 0;
    this.controller = new AbortController(); // aborts the latest round's requests
  }

  /** Ask about `text` (null: about nothing) now, before the pause; Map name -> Promise of its answer. */
  ahead(text, names) {
    return this.speculation.ahead(text, names);
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

/**
 * One kind of request, asked again and again: each ask aborts the one before, and an answer that
 * arrives after a newer ask (or after `within()`, the round's signal, is aborted) is never shown.
 */
export class Latest {
  constructor(within = null) {
    this.within = within;
    this.controller = null;
  }

  /** Abort the ask in flight, if any: its answer will not be shown. */
  cancel() {
    this.controller?.abort();
  }

  /**
   * `call(signal)` -> Promise of the answer; `show(answer)` runs only if this is still the latest
   * ask. Resolves to true once shown, false when replaced; a failure of the latest ask is thrown.
   */
  async ask(call, show) {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    const signal = this.within ? AbortSignal.any([controller.signal, this.within()]) : controller.signal;
    let answer;
    try {
      answer = await call(signal);
    } catch (error) {
      if (isAbort(error) || signal.aborted) return false;
      throw error;
    }
    if (signal.aborted) return false;
    await show(answer);
    return true;
  }
}

class Round {
  constructor(requests, generation, signal) {
    this.requests = requests;
    this.generation = generation;
    this.signal = signal;
    this.drawn = {}; // model name -> when its answer was drawn (performance.now())
  }

  /** Model `name`'s answer is on the page (announced with the round, for bench/bench_page.py). */
  drew(name) {
    this.drawn[name] = performance.now();
  }

  /** False once a newer round has begun or this one was replaced: its answers are not shown. */
  get current() {
    return this.generation === this.requests.generation && !this.signal.aborted;
  }

  /** `promise`, or an AbortError as soon as the round is over. */
  wait(promise) {
    return unlessAborted(promise, this.signal);
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
    }));
  }
}
