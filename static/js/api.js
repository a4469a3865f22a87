// The JSON API (docs API.md), one function per endpoint. Every call takes an AbortSignal so the
// caller can drop a request the moment a newer one makes it stale.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
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
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    if (response.ok) throw new ApiError(response.status, "the server sent something that is not JSON");
  }
  if (!response.ok) throw new ApiError(response.status, reason(data, response.status));
  return data;
}

export const isAbort = (error) => error && error.name === "AbortError";

export const health = (signal) => request("GET", "/api/health", undefined, signal);
export const listModels = (signal) => request("GET", "/api/models", undefined, signal);
export const translate = (text, model, signal) => request("POST", "/api/translate", { text, model }, signal);
export const attention = (text, model, signal) => request("POST", "/api/attention", { text, model }, signal);
export const gradients = (text, length, signal) => request("POST", "/api/gradients", { text, length }, signal);
