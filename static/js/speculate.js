// Ask early, show late. The views change only after a pause in typing (~70 ms), but the server
// need not wait that long: a text is asked about right away, so when the pause is over the
// answers are here or on their way, and the update takes what is there.
//
// One request per text carries every model (POST /api/compare, answers streamed as each model
// finishes). Five requests per keystroke, and five aborts at the next, took CPU from the models
// on a 2-core machine: with one, the last answer came 84-85 ms after the key instead of 110-154
// (bench/bench_page.py, interleaved runs).
//
// A newer text makes the older one's request worthless: it is aborted, and the server drops
// work whose client has gone (app/disconnect.py), so the newest text never queues behind it.
//
// That holds while the server has room. Each compare's answer says how many turns were queued
// for the model thread before it (X-Queue-Depth); from BUSY_DEPTH on, the server is busy and a
// request per keystroke only adds to its queue: then a reader keeps one request in flight, not
// aborted, and the newest text waits for it, replacing any text that was waiting, and goes when it
// ends. So under load a reader asks once per answer instead of once per key (bench/readers.py).

const KEEP = 40; // answers remembered (about eight texts of five models)
export const BUSY_DEPTH = 2; // X-Queue-Depth from which a reader stops asking at every key

export class Speculation {
  /**
   * `fetchRound(text, names, signal, onDepth)` asks about one text for several models in one
   * request and returns a Map name -> Promise of that model's answer; it calls onDepth(n) with the
   * answer's X-Queue-Depth.
   */
  constructor(fetchRound) {
    this.fetchRound = fetchRound;
    this.answers = new Map(); // "name\ntext" -> {promise, text, controller (null once settled)}, oldest first
    this.text = null; // the newest text asked about
    this.depth = 0; // the server's X-Queue-Depth at the latest answer
    this.running = new Set(); // controllers of the requests in flight
    this.held = null; // busy: the newest text's request, {controller, start}, waiting for the one in flight
    this.sent = 0; // requests sent (for tests and the benchmark)
  }

  get busy() {
    return this.depth >= BUSY_DEPTH;
  }

  /** Map name -> Promise of its answer about `text`: those already asked for, the others in one new request. */
  ask(text, names) {
    const key = (name) => `${name}\n${text}`;
    // taken before anything new is remembered: remembering may forget the oldest answers
    const asked = new Map(names.filter((name) => this.answers.has(key(name)))
      .map((name) => [name, this.answers.get(key(name)).promise]));
    const missing = names.filter((name) => !asked.has(name));
    if (missing.length) {
      const controller = new AbortController();
      const promises = this.busy && this.running.size ? this.hold(text, missing, controller)
        : this.send(text, missing, controller);
      for (const name of missing) {
        asked.set(name, promises.get(name));
        this.remember(key(name), promises.get(name), text, controller);
      }
    }
    return new Map(names.map((name) => [name, asked.get(name)]));
  }

  send(text, names, controller) {
    this.running.add(controller);
    this.sent += 1;
    const promises = this.fetchRound(text, names, controller.signal, (depth) => { this.depth = depth; });
    Promise.allSettled(promises.values()).then(() => {
      this.running.delete(controller);
      this.release();
    });
    return promises;
  }

  /** Promises for a request that starts when the one in flight ends (or rejects if a newer text replaces it). */
  hold(text, names, controller) {
    if (this.held) this.held.controller.abort(); // the newest text replaces the one waiting
    const waiting = new Map(names.map((name) => [name, deferred()]));
    const held = {
      controller,
      start: () => {
        const promises = this.send(text, names, controller);
        for (const [name, one] of waiting) promises.get(name).then(one.resolve, one.reject);
      },
    };
    controller.signal.addEventListener("abort", () => {
      if (this.held === held) this.held = null;
      for (const one of waiting.values()) one.reject(new DOMException("replaced", "AbortError"));
    }, { once: true });
    this.held = held;
    return new Map([...waiting].map(([name, one]) => [name, one.promise]));
  }

  release() {
    if (this.running.size || !this.held) return;
    const { start } = this.held;
    this.held = null;
    start();
  }

  remember(key, promise, text, controller) {
    const entry = { promise, text, controller };
    this.answers.set(key, entry);
    // a failure (an abort included) is not remembered: the next ask tries again
    promise.then(
      () => { entry.controller = null; },
      () => this.answers.get(key) === entry && this.answers.delete(key),
    );
    while (this.answers.size > KEEP) this.answers.delete(this.answers.keys().next().value);
  }

  /**
   * Ask about `text` now (null: about nothing, e.g. an empty box), aborting first the request
   * still running for any other text; returns `ask`'s Map (null for no text).
   */
  ahead(text, names) {
    if (text !== this.text) {
      this.text = text;
      // busy: the request in flight is kept (the next one waits for it); one waiting is replaced
      const keep = (controller) => this.busy && this.running.has(controller);
      for (const [key, entry] of this.answers) {
        if (entry.controller && entry.text !== text && !keep(entry.controller)) {
          entry.controller.abort();
          this.answers.delete(key);
        }
      }
    }
    return text === null ? null : this.ask(text, names);
  }
}

function deferred() {
  const one = {};
  one.promise = new Promise((resolve, reject) => Object.assign(one, { resolve, reject }));
  one.promise.catch(() => {}); // a replaced text's rejection nobody awaits is not an error
  return one;
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
