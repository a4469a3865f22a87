// The JSON API (docs API.md), one function per endpoint. Every call takes an AbortSignal so the
// caller can drop a request the moment a newer one makes it stale. The API speaks English (its
// `detail`s are a contract); `explain` words a failure in the page's language.
import { t } from "./i18n.js";

// this page's X-Supersede-Key (see `compare`): 128 random bits (getRandomValues, unlike
// randomUUID, also exists on a page served over plain http from another machine)
const VISIT = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");

export class ApiError extends Error {
  constructor(status, message, body = null, retryAfter = null) {
    super(message);
    this.name = "ApiError";
    this.status = status; // 0: no answer at all (the network or the server is gone)
    this.body = body; // the JSON the server sent with the error, if any
    this.retryAfter = retryAfter; // seconds, from a 429's or 503's Retry-After
  }
}

/**
 * The page's one Retry-After policy: the seconds to wait before asking again, when the server
 * refused for being full (429, 503) and named them; else null (ask no more on its own). The
 * request lifecycle (requests.js) asks again after them, speculation (speculate.js) sends nothing
 * before they have passed.
 */
export function waitBeforeRetry(error) {
  const busy = error instanceof ApiError && (error.status === 429 || error.status === 503);
  return busy && error.retryAfter !== null ? error.retryAfter : null;
}

// a spent share's name (a 429's `share`, docs/SERVER.md) -> the words for what it counts
const SHARES = { model_time: "share.model_time", timing: "share.timing", train: "share.train" };

/** What went wrong with a request, in words a reader can act on (for a panel's message). */
export function explain(error) {
  if (!(error instanceof ApiError)) return t("error.unusable");
  const seconds = error.retryAfter;
  if (error.status === 0) return t("error.unreachable");
  const share = error.status === 429 && error.body && SHARES[error.body.share];
  if (share) return t("error.share-spent", { share: t(share), seconds: seconds || 1 });
  if (error.status === 429) return t(seconds ? "error.taken-retry-in" : "error.taken", { seconds });
  if (error.status === 503 && seconds) return t("error.too-many-retry-in", { seconds });
  if (error.status >= 500) return t("error.server", { status: error.status, message: error.message });
  return t("error.rejected", { status: error.status, message: error.message });
}

/** `fetch`, with a lost connection as ApiError(0) (an abort stays an AbortError). */
async function reach(path, init) {
  try {
    return await fetch(path, init);
  } catch (error) {
    if (isAbort(error)) throw error;
    throw new ApiError(0, "the server could not be reached");
  }
}

function retryAfter(response) {
  const seconds = Number.parseInt(response.headers.get("Retry-After") || "", 10);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : null;
}

/** FastAPI puts its reason in `detail`: a string, or a list of validation errors. */
function reason(body, status) {
  const detail = body && body.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail) && detail.length) {
    return detail.map((d) => `${(d.loc || []).slice(1).join(".") || "request"}: ${d.msg}`).join("; ");
  }
  return `HTTP ${status}`;
}

async function request(method, path, body, signal) {
  const init = { method, signal, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await reach(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    if (isAbort(error)) throw error;
    if (response.ok) throw new ApiError(response.status, "the server sent something that is not JSON");
  }
  if (!response.ok) throw new ApiError(response.status, reason(data, response.status), data, retryAfter(response));
  return data;
}

/**
 * POST /api/compare: several models on one text in one request. Each carries this visit's
 * X-Supersede-Key: the server stops an older compare's work as soon as a newer one arrives (the
 * page only ever wants the newest text), without waiting for the aborted connection to close. The server sends one JSON line
 * per model as soon as that model is done; returns a Map model -> Promise of its answer (what
 * /api/attention answers), each settled as its line arrives. An abort rejects those still waiting.
 * `supersede` false: no key, for a second request about a text whose first is still streaming.
 */
export function compare(text, models, signal, supersede = true) {
  const waiting = new Map(models.map((name) => [name, settler()]));
  const promises = new Map([...waiting].map(([name, one]) => [name, one.promise])); // before any line settles one
  const settle = (answer) => {
    const one = waiting.get(answer.model);
    if (!one) return;
    waiting.delete(answer.model);
    if (answer.error) one.reject(new ApiError(500, answer.error));
    else one.resolve(answer);
  };
  const headers = supersede ? { "X-Supersede-Key": VISIT } : {};
  readLines("/api/compare", { text, models }, signal, (line) => settle(JSON.parse(line)), headers)
    .then(() => new ApiError(502, "the server's answer ended early"), (error) => error)
    .then((error) => {
      for (const one of waiting.values()) one.reject(error);
    });
  return promises;
}

function settler() {
  const one = {};
  one.promise = new Promise((resolve, reject) => Object.assign(one, { resolve, reject }));
  one.promise.catch(() => {}); // rejections nobody awaits (an aborted round) are not errors
  return one;
}

/** POST `body` and hand each line of the streamed answer to `onLine` as it arrives. */
async function readLines(path, body, signal, onLine, headers = {}) {
  const response = await reach(path, {
    method: "POST", signal, body: JSON.stringify(body),
    headers: { Accept: "application/x-ndjson", "Content-Type": "application/json", ...headers },
  });
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    throw new ApiError(response.status, reason(data, response.status), data, retryAfter(response));
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read().catch((error) => {
      throw isAbort(error) ? error : new ApiError(0, "the connection was lost during the answer");
    });
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.trim()) onLine(line);
    }
  }
}

/** GET /api/train: the "train it yourself" experiment's tasks, contestants, defaults, limits, sweep. */
export const trainInfo = (signal) => request("GET", "/api/train", undefined, signal);
/** POST /api/train: one live run; each streamed line (JSON text) goes to `onLine` as it arrives. */
export const train = (settings, signal, onLine) => readLines("/api/train", settings, signal, onLine);

export const isAbort = (error) => error && error.name === "AbortError";

/** GET /api/health. A server with no model loaded answers 503 with the same body: it is returned too. */
export async function health(signal) {
  try {
    return await request("GET", "/api/health", undefined, signal);
  } catch (error) {
    if (error instanceof ApiError && error.status === 503 && error.body && error.body.limits) return error.body;
    throw error;
  }
}

export const listModels = (signal) => request("GET", "/api/models", undefined, signal);
/** The gradients chapter: curves trained and at initialization, with their per-step factors. */
export const gradients = (text, length, signal) =>
  request("POST", "/api/gradients", { text, length, initialized: true, factors: true }, signal);
export const longLag = (signal) => request("GET", "/api/long-lag", undefined, signal);
export const lagGradients = (lag, filler, signal) =>
  request("POST", "/api/long-lag/gradients", { lag, filler }, signal);
/** The training chapter: every model's training log, and (GET /api/models) where each checkpoint was kept. */
export const curves = (signal) => request("GET", "/api/curves", undefined, signal);
/** The recurrence chapter: the plain RNN's encoder states on `text`. */
export const recurrence = (text, signal) => request("POST", "/api/recurrence", { text }, signal);
/** The attention chapter: output piece `row`'s scores, weights, softmax(e / T) and blend for `model`. */
export const scores = (text, model, row, temperature, signal) =>
  request("POST", "/api/scores", { text, model, row, temperature }, signal);
/** The parallel chapter: encoder time against length (`lengths` null: the server's), and its progress. */
export const timing = (lengths, refresh, signal) =>
  request("POST", "/api/timing", { ...(lengths ? { lengths } : {}), refresh }, signal);
export const timingStatus = (signal) => request("GET", "/api/timing/status", undefined, signal);
/** The attention chapter's one line: softmax(QK^T / sqrt(d_k)) V on `head` of the first encoder layer. */
export const lookup = (text, head, signal) => request("POST", "/api/lookup", { text, head }, signal);

/** The scaling chapter: softmax saturation against d_k, sampled and on the model's own scores. */
export const scaling = (text, signal) => request("POST", "/api/scaling", { text }, signal);
/** The order chapter: the source shuffled (`seed`), encoder maps with positional encoding off and on. */
export const order = (text, seed, signal) => request("POST", "/api/order", { text, seed }, signal);
/** The heads chapter: per-head contributions through W_O, alignment ranking, rollout, `heads_off`'s effect. */
export const snapshot = (text, model, step, signal) =>
  request("POST", "/api/snapshots", { text, model, step, kinds: ["cross"] }, signal);

export const heads = (text, model, headsOff, signal) =>
  request("POST", "/api/heads", { text, model, heads_off: headsOff }, signal);
/** The recap chapter: the recap's rows measured on `text`, one request for them all. */
export const recap = (text, signal) => request("POST", "/api/recap", { text }, signal);
/** A greedy translation by the Transformer with some of its sub-layer switches off (the room chapter). */
export const translateWith = (text, model, sublayersOff, signal) =>
  request("POST", "/api/translate", { text, model, sublayers_off: sublayersOff }, signal);
/** The prediction chapter's free labels: the loss at each position of the model's own translation, or of an English `reference`. */
export const nextToken = (text, model, signal, reference = null) =>
  request("POST", "/api/next-token", { text, ...(model ? { model } : {}), ...(reference ? { reference } : {}) }, signal);
/** The prediction chapter: per step the top-k next pieces, a forced `prefix` of pieces, greedy or a beam (candidates, tree). */
export const predict = (text, model, prefix, topK, beamSize, signal) =>
  request("POST", "/api/predict", { text, model, prefix, top_k: topK, beam_size: beamSize }, signal);
