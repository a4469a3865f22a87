// Wiring: the text box drives every view; page state (text, selected model, kind, head, length)
// lives in the URL. Each edit asks the server at once (speculate.js) and starts a new "generation"
// after a pause in typing: the previous generation stops waiting (its gradient request is aborted)
// and any answer that still arrives for it is ignored, so the latest text always wins.
import * as api from "./api.js";
import { drawAlignment } from "./alignment.js";
import { drawGates, drawGradients } from "./gradients.js";
import { KINDS, drawHeadDetail, drawHeadGrid, mapsOfKind } from "./heads.js";
import { whenNear } from "./lazy.js";
import { showEmpty } from "./plots.js";
import { Speculation, unlessAborted } from "./speculate.js";
import { MODEL_NAMES, TranslationCards, bucketOf, drawBleuByLength } from "./translations.js";

const MAX_CHARS = 500;
const PAUSE_MS = 120; // the views change after this pause in typing
const ATTENTION_MODELS = ["lstm-additive", "lstm-dot", "transformer"];
const DEFAULT_TEXT = "Je mange du pain.";

const $ = (id) => document.getElementById(id);
window.attentionLab = { lastUpdate: null };

const state = {
  text: DEFAULT_TEXT,
  model: "transformer",
  kind: "cross",
  layer: 0,
  head: 0,
  length: 80,
  gateView: "mean",
  models: [],
  gradientsAnswer: null, // the last /api/gradients answer, for gate view changes
  transformer: null, // the last /api/attention answer of the transformer, for kind/head changes
  generation: 0,
  controller: null,
  gradController: null,
};

// ------------------------------------------------------------------ URL state
function readUrl() {
  const q = new URLSearchParams(location.search);
  if (q.has("text")) state.text = q.get("text");
  if (MODEL_NAMES.includes(q.get("model"))) state.model = q.get("model");
  if (KINDS.includes(q.get("kind"))) state.kind = q.get("kind");
  const head = /^(\d+)\.(\d+)$/.exec(q.get("head") || "");
  if (head) [state.layer, state.head] = [Number(head[1]) - 1, Number(head[2]) - 1];
  const length = Number(q.get("len"));
  if (Number.isInteger(length) && length >= 1 && length <= 200) state.length = length;
}

function writeUrl() {
  const q = new URLSearchParams();
  q.set("text", state.text);
  q.set("model", state.model);
  q.set("kind", state.kind);
  q.set("head", `${state.layer + 1}.${state.head + 1}`);
  q.set("len", String(state.length));
  history.replaceState(null, "", `${location.pathname}?${q}`);
}

// ------------------------------------------------------------------ status line
function say(message, tone = "info") {
  const status = $("status");
  if (!message) {
    status.hidden = true;
    status.textContent = "";
    return;
  }
  status.hidden = false;
  status.dataset.tone = tone;
  status.textContent = message;
}

function describeError(error) {
  if (error instanceof api.ApiError) return error.status >= 500 ? `server error ${error.status}` : error.message;
  return "the server could not be reached";
}

// ------------------------------------------------------------------ views
let cards;

let bleuDrawn = "";

/** The BLEU chart changes only with the length bucket or the selected model. */
function drawBleu() {
  const key = `${bucketOf(state.text)}|${state.model}|${state.models.length}`;
  if (key === bleuDrawn) return;
  bleuDrawn = key;
  const div = $("bleu-plot");
  whenNear(div, () => drawBleuByLength(div, state.models, bucketOf(state.text), state.model));
}

function fillHeadPickers() {
  const info = state.models.find((m) => m.name === "transformer");
  const dims = state.transformer ? mapsOfKind(state.transformer, state.kind) : { layers: 0, heads: 0 };
  const layers = dims.layers || (info && info.layers) || 1;
  const heads = dims.heads || (info && info.heads) || 1;
  state.layer = Math.min(state.layer, layers - 1);
  state.head = Math.min(state.head, heads - 1);
  for (const [id, count, value] of [["pick-layer", layers, state.layer], ["pick-head", heads, state.head]]) {
    const select = $(id);
    if (select.options.length !== count) {
      select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i + 1))));
    }
    select.value = String(value + 1); // options count from 1, like the labels
  }
  $("head-title").textContent = `Layer ${state.layer + 1}, head ${state.head + 1}`;
}

function drawHeads() {
  if (!cards.isAvailable("transformer")) return;
  if (!state.transformer) return;
  fillHeadPickers();
  const { transformer, kind, layer, head } = state;
  whenNear($("heads-grid"), () => drawHeadGrid($("heads-grid"), transformer, kind, [layer, head], pickHead));
  whenNear($("head-detail"), () => drawHeadDetail($("head-detail"), transformer, kind, layer, head));
}

function pickHead(layer, head) {
  state.layer = layer;
  state.head = head;
  drawHeads();
  writeUrl();
}

const UNAVAILABLE = "This model is not available yet: it is still training or its checkpoint is missing.";

function markUnavailableViews() {
  for (const name of ["lstm-additive", "lstm-dot"]) {
    if (!cards.isAvailable(name)) showEmpty($(`align-${name}`), `${name}: ${UNAVAILABLE}`);
  }
  if (!cards.isAvailable("transformer")) {
    showEmpty($("heads-grid"), `transformer: ${UNAVAILABLE}`);
    showEmpty($("head-detail"), "The enlarged head appears here once the Transformer is available.");
  }
}

// ------------------------------------------------------------------ one update per pause in typing
/**
 * Every view shows the latest text: say so for tests and benchmarks (`lab:updated` event,
 * `window.attentionLab.lastUpdate`, `data-updated` on <html>).
 */
function signalUpdated(generation) {
  // after the next paint: the frame, then the task that follows it
  requestAnimationFrame(() => setTimeout(() => {
    if (generation !== state.generation) return;
    const detail = { generation, text: state.text, at: performance.now() };
    window.attentionLab.lastUpdate = detail;
    document.documentElement.dataset.updated = String(generation);
    window.dispatchEvent(new CustomEvent("lab:updated", { detail }));
  }));
}

function validate(text) {
  const trimmed = text.trim();
  if (!trimmed) return "Type a French sentence and every model below will translate it.";
  if (trimmed.length > MAX_CHARS) {
    return `That is ${trimmed.length} characters; the models take at most ${MAX_CHARS}. Shorten it and the views will update.`;
  }
  return null;
}

function update() {
  const text = $("source").value;
  state.text = text;
  writeUrl();
  const problem = validate(text);
  if (state.controller) state.controller.abort();
  const generation = ++state.generation;
  if (problem) {
    say(problem, text.trim() ? "warn" : "info");
    signalUpdated(generation);
    return;
  }
  const controller = new AbortController();
  state.controller = controller;
  const { signal } = controller;
  const current = () => generation === state.generation;
  const failures = [];
  cards.setBucket(bucketOf(text));
  drawBleu();

  // asked while typing already (an example picked is asked here)
  const answers = speculation.ahead(text, heaviestFirst());
  const jobs = availableModels().map(async (name) => {
    cards.busy(name, true);
    try {
      const usesAttention = ATTENTION_MODELS.includes(name);
      const answer = await unlessAborted(answers.get(name), signal);
      if (!current()) return;
      cards.setTranslation(name, answer.translation);
      if (name === "transformer") {
        state.transformer = answer;
        drawHeads();
      } else if (usesAttention) {
        const div = $(`align-${name}`);
        whenNear(div, () => drawAlignment(div, name, answer));
      }
    } catch (error) {
      if (api.isAbort(error) || !current()) return;
      failures.push(`${name}: ${describeError(error)}`);
      cards.setProblem(name, error instanceof api.ApiError && error.status === 404 ? UNAVAILABLE : "No answer this time.");
    }
  });
  // the gradient experiment is the heaviest request: it runs only once its plots are near the screen
  jobs.push(whenNear($("grad-plot"), () => updateGradients(text, signal, generation, failures), updateLengthOnly));

  Promise.all(jobs).then(() => {
    if (!current()) return;
    say(failures.length ? `Some views could not update (${failures.join("; ")}). The others show your latest sentence.` : null, "error");
    signalUpdated(generation);
  });
}

async function updateGradients(text, signal, generation, failures) {
  const current = () => generation === state.generation;
  if (!cards.isAvailable("rnn") && !cards.isAvailable("lstm")) {
    showEmpty($("grad-plot"), "The RNN and LSTM models are not available yet, so there is nothing to measure.");
    showEmpty($("gates-plot"), "The LSTM is not available yet, so its gates cannot be shown.");
    return;
  }
  try {
    const answer = await api.gradients(text.trim(), state.length, signal);
    if (!current()) return;
    state.gradientsAnswer = answer;
    drawGradients($("grad-plot"), answer);
    drawGates($("gates-plot"), answer, state.gateView);
  } catch (error) {
    if (api.isAbort(error) || !current()) return;
    failures.push(`gradients: ${describeError(error)}`);
  }
}

/** The length slider only re-runs the gradient experiment. */
function updateLengthOnly() {
  const problem = validate(state.text);
  if (problem) return;
  if (state.gradController) state.gradController.abort();
  state.gradController = new AbortController();
  const failures = [];
  updateGradients(state.text, state.gradController.signal, state.generation, failures).then(() => {
    if (failures.length) say(`The gradient experiment failed (${failures.join("; ")}).`, "error");
  });
}

const availableModels = () => MODEL_NAMES.filter((name) => cards.isAvailable(name));
// The server runs them in the order asked: heaviest first (the story's order reversed), so the
// quick ones are those left when the page redraws after the pause.
const heaviestFirst = () => availableModels().reverse();
const speculation = new Speculation(api.compare);

function debounce(fn, ms) {
  let timer = 0;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

function showCount() {
  const n = $("source").value.trim().length;
  const count = $("char-count");
  count.textContent = `${n} / ${MAX_CHARS}`;
  count.classList.toggle("is-over", n > MAX_CHARS);
}

// ------------------------------------------------------------------ start
async function loadModels() {
  try {
    state.models = await api.listModels();
  } catch (error) {
    state.models = [];
    say(`Could not list the models (${describeError(error)}).`, "error");
  }
  cards.setModels(state.models);
  markUnavailableViews();
  if (!state.models.length) {
    showEmpty($("bleu-plot"), "No model is available yet.");
  }
}

async function start() {
  readUrl();
  const source = $("source");
  source.value = state.text;
  showCount();
  cards = new TranslationCards($("cards"), (name) => {
    state.model = name;
    cards.select(name);
    drawBleu();
    writeUrl();
  });
  cards.select(state.model);
  for (const input of document.querySelectorAll('input[name="kind"]')) {
    input.checked = input.value === state.kind;
    input.addEventListener("change", () => {
      state.kind = input.value;
      drawHeads();
      writeUrl();
    });
  }
  $("pick-layer").addEventListener("change", (e) => pickHead(Number(e.target.value) - 1, state.head));
  $("pick-head").addEventListener("change", (e) => pickHead(state.layer, Number(e.target.value) - 1));

  $("gate-view").addEventListener("change", (e) => {
    state.gateView = e.target.value;
    const answer = state.gradientsAnswer;
    if (answer) whenNear($("gates-plot"), () => drawGates($("gates-plot"), answer, state.gateView));
  });

  const slider = $("grad-length");
  const shown = $("grad-length-value");
  slider.value = String(state.length);
  shown.textContent = `${state.length} tokens`;
  const lengthLater = debounce(() => {
    updateLengthOnly();
    writeUrl();
  }, PAUSE_MS);
  slider.addEventListener("input", () => {
    state.length = Number(slider.value);
    shown.textContent = `${state.length} tokens`;
    lengthLater();
  });

  const later = debounce(update, PAUSE_MS);
  source.addEventListener("input", () => {
    showCount();
    speculation.ahead(validate(source.value) ? null : source.value, heaviestFirst());
    later();
  });
  for (const chip of document.querySelectorAll("[data-example]")) {
    chip.addEventListener("click", () => {
      source.value = chip.dataset.example;
      showCount();
      update();
      source.focus();
    });
  }

  // the composer sticks to the top on wide screens: compact it while it is stuck
  new IntersectionObserver(([entry]) => {
    $("composer").classList.toggle("is-stuck", !entry.isIntersecting);
  }).observe($("composer-sentinel"));

  await loadModels();
  update();
}

start();
