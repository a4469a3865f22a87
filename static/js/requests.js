// The request lifecycle. Each edit asks the server at once (speculate.js); after a pause in typing
// a new round of updates begins: the previous round's requests are aborted and any answer that
// still arrives for it is ignored, so the latest text always wins.
import { Speculation, unlessAborted } from "./speculate.js";

window.attentionLab = { lastUpdate: null };

export class Requests {
  /** `compare(text, names, signal)`: one request for several models (api.compare). */
  constructor(compare) {
    this.speculation = new Speculation(compare);
    this.generation = 0;
    this.controller = new AbortController(); // aborts the latest round's requests
    this.replaced = new AbortController(); // aborts the latest replaceable request
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

  /**
   * The current round, for a request that a newer one of its kind replaces even within a round
   * (the gradient experiment: the length slider asks it again). It is over when the round is.
   */
  replaceable() {
    this.replaced.abort();
    this.replaced = new AbortController();
    return new Round(this, this.generation, AbortSignal.any([this.replaced.signal, this.controller.signal]));
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
