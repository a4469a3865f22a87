// Ask early, show late. The views change only after a pause in typing, but the server need not
// wait for that pause: every edit starts the requests for the new text at once, so when the pause
// is over their answers are on the way or already here, and the update takes what is there.
//
// At most one round of requests is in flight; a newer text waits for it, and the texts typed in
// between are skipped. (Aborting a fetch would not stop the server's work, so firing a round per
// keystroke would only queue stale work in front of the text that matters.)

const KEEP = 40; // answers remembered (about eight texts of five models)

export class Speculation {
  /** `round(text)` lists the requests a text needs: [[key, start], ...], start() -> Promise. */
  constructor(round) {
    this.round = round;
    this.answers = new Map(); // key -> Promise of the answer, oldest first
    this.inFlight = null; // the text whose round is running
    this.queued = null; // the newest text waiting for that round to end
  }

  /** The answer for `key`: the request already made for it, else a new one. */
  ask(key, start) {
    let promise = this.answers.get(key);
    if (promise) return promise;
    promise = start();
    this.answers.set(key, promise);
    // a failure is not remembered: the next ask tries again
    promise.catch(() => this.answers.get(key) === promise && this.answers.delete(key));
    while (this.answers.size > KEEP) this.answers.delete(this.answers.keys().next().value);
    return promise;
  }

  /** Start the round for `text` now, or once the round in flight is done. */
  ahead(text) {
    if (this.inFlight !== null) {
      if (text !== this.inFlight) this.queued = text;
      return;
    }
    this.inFlight = text;
    const jobs = this.round(text).map(([key, start]) => this.ask(key, start));
    Promise.allSettled(jobs).then(() => {
      this.inFlight = null;
      const next = this.queued;
      this.queued = null;
      if (next !== null) this.ahead(next);
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
