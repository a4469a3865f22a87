// The JSON API (docs/API.md): how the page asks it (`get`, `post`, `lines` for a streamed answer) and
// the requests the whole page shares (the first screen's compare, health, the models). A chapter's
// own request is written in its view (static/js/chapters/, `fetch<Name>`), so a new chapter edits no
// list here. Every call takes an AbortSignal so the caller can drop a request the moment a newer one
// makes it stale. The API speaks English (its
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
const SHARES = { model_time: "share.model_time", timing: "share.timing", train: "share.train", teach: "share.teach" };

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

/** GET `path` -> Promise of its JSON answer (a chapter's own request, written in its view). */
export const get = (path, signal) => request("GET", path, undefined, signal);
/** POST `body` to `path` -> Promise of its JSON answer. */
export const post = (path, body, signal) => request("POST", path, body, signal);
/** POST `body` to `path`, handing each line of its streamed (NDJSON) answer to `onLine` as it arrives. */
export const lines = (path, body, signal, onLine) => readLines(path, body, signal, onLine);
