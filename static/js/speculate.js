// Ask early, show late. The views change only after a pause in typing (PAUSE_MS, main.js), but the
// server need not wait that long: a text is asked about right away, so when the pause is over the
// answers are here or on their way, and the update takes what is there.
//
// One request per text carries every model (POST /api/compare, answers streamed as each model
// finishes). Five requests per keystroke, and five aborts at the next, take CPU from the models
// on a 2-core machine, so the last answer comes later than with one (bench/bench_page.py).
//
// A newer text makes the older one's request worthless: it is aborted, and the server drops
// work whose client has gone (app/disconnect.py), so the newest text never queues behind it.
//
// Under load too: the page asks at every key and aborts the older request, and the server stops
// the older text's work as the newer request arrives (its X-Supersede-Key). Keeping one request in
// flight and holding the newest text until it ended was measured worse: the last text then waited
// for an older answer nobody would see, and for its own turn after it (bench/readers.py; the figures
// are in bench/README.md). What makes a reader ask less often is the server's own refusal: after a
// 429 or 503 that names a Retry-After, no request is sent until that time has passed (the round
// asks the newest text again then, requests.js), so a full server is not asked once per key by
// every reader it turned away.
import { waitBeforeRetry } from "./api.js";

const KEEP = 40; // answers remembered (about eight texts of five models)

export class Speculation {
  /**
   * `fetchRound(text, names, signal, supersede)` asks about one text for several models in one request
   * (superseding the older text's request when `supersede`) and returns a Map name -> Promise of that
   * model's answer (api.compare).
   */
  constructor(fetchRound) {
    this.fetchRound = fetchRound;
    this.answers = new Map(); // "name\ntext" -> {promise, text, controller (null once settled)}, oldest first
    this.text = null; // the newest text asked about
    this.quietUntil = 0; // Date.now() before which nothing is sent: the server said it was full
    this.refusal = null; // the 429 or 503 that said so
    this.sent = 0; // requests sent (for tests and the benchmark)
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
      const promises = Date.now() < this.quietUntil ? this.refused(missing) : this.send(text, missing, controller);
      for (const name of missing) {
        asked.set(name, promises.get(name));
        this.remember(key(name), promises.get(name), text, controller);
      }
    }
    return new Map(names.map((name) => [name, asked.get(name)]));
  }

  send(text, names, controller) {
    this.sent += 1;
    // Only a text's first request supersedes (the server then stops the older text's work): another for
    // the same text (models a view asks for later) must not stop its sibling still streaming, whose
    // answers views wait for. The page aborts such siblings itself once the text changes (`ahead`).
    const sibling = [...this.answers.values()].some((entry) => entry.controller && entry.text === text);
    const promises = this.fetchRound(text, names, controller.signal, !sibling);
    promises.values().next().value?.catch((error) => this.quiet(error));
    return promises;
  }

  /** A refusal the page's Retry-After policy waits out (api.js): nothing is sent before it has passed. */
  quiet(error) {
    const wait = waitBeforeRetry(error);
    if (wait === null) return;
    this.quietUntil = Math.max(this.quietUntil, Date.now() + 1000 * wait);
    this.refusal = error;
  }

  /** While quiet: each name's promise rejects at once with the refusal, its Retry-After what is left of it. */
  refused(names) {
    const left = Math.max(1, Math.ceil((this.quietUntil - Date.now()) / 1000));
    const { status, message, body } = this.refusal;
    const error = new this.refusal.constructor(status, message, body, left);
    return new Map(names.map((name) => {
      const promise = Promise.reject(error);
      promise.catch(() => {}); // a rejection nobody awaits (a text typed over) is not an error
      return [name, promise];
    }));
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
      for (const [key, entry] of this.answers) {
        if (entry.controller && entry.text !== text) {
          entry.controller.abort();
          this.answers.delete(key);
        }
      }
    }
    return text === null ? null : this.ask(text, names);
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
