// Ask early, show late. The views change only after a pause in typing (~120 ms), but the server
// need not wait that long: a text is asked about right away, so when the pause is over the
// answers are here or on their way, and the update takes what is there.
//
// A newer text makes the older one's requests worthless: they are aborted, and the server drops
// work whose client has gone (app/disconnect.py), so the newest text never queues behind them.
// (Without that, every early round would have to finish before the next could start.)

const KEEP = 40; // answers remembered (about eight texts of five models)

export class Speculation {
  /**
   * `round(text)` lists the requests a text needs: [[key, start, text], ...], where
   * start(signal) returns a Promise.
   */
  constructor(round) {
    this.round = round;
    this.timer = 0;
    this.answers = new Map(); // key -> {promise, text, controller (null once settled)}, oldest first
    this.text = null; // the newest text asked about
  }

  /** The answer for `key` (a request about `text`): the request already made, else a new one. */
  ask(key, start, text = null) {
    const known = this.answers.get(key);
    if (known) return known.promise;
    const controller = new AbortController();
    const entry = { promise: start(controller.signal), text, controller };
    this.answers.set(key, entry);
    // a failure (an abort included) is not remembered: the next ask tries again
    entry.promise.then(
      () => { entry.controller = null; },
      () => this.answers.get(key) === entry && this.answers.delete(key),
    );
    while (this.answers.size > KEEP) this.answers.delete(this.answers.keys().next().value);
    return entry.promise;
  }

  /**
   * Ask about `text` soon (null: about nothing, e.g. an empty box); requests still running for
   * any other text are aborted now.
   */
  ahead(text) {
    if (text === this.text) return;
    this.text = text;
    for (const [key, entry] of this.answers) {
      if (entry.controller && entry.text !== text) {
        entry.controller.abort();
        this.answers.delete(key);
      }
    }
    clearTimeout(this.timer);
    if (text === null) return;
    // in the next task: the aborted requests have settled by then, and keys typed in the same
    // task cost one round, not one each
    this.timer = setTimeout(() => {
      for (const [key, start] of this.round(text)) this.ask(key, start, text);
    });
  }
}

/** `promise`, or an AbortError as soon as `signal` aborts (the request itself goes on). */
export function unlessAborted(promise, signal) {
  if (signal.aborted) return Promise.reject(new DOMException("stale", "AbortError"));
  return new Promise((resolve, reject) => {
    const stop = () => reject(new DOMException("stale", "AbortError"));
    signal.addEventListener("abort", stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", stop));
  });
}
