// Teach it a pair (the training chapter), its set-up: what the server offers (GET /api/teach: the
// models that can be taught, the defaults, the limits) as controls kept in the URL (target,
// teachmodel, teachsteps, rehearse), beside the sentence typed at the top. Asked once, when the
// experiment first comes near the screen (asking it has the server start a run's process ahead).
// The settings are shared (store `teach`) with the run itself (teach-run.js).
import * as api from "../api.js";
import { listOf, t } from "../i18n.js";
import * as store from "../store.js";
import { countOrNull } from "../url-state.js";

export const chapter = "training";
/** GET /api/teach: the models a reader may teach, the defaults and the limits. */
export const fetchTeachInfo = (signal) => api.get("/api/teach", signal);
export const title = "teaching set-up";
export const figures = ["teach-controls", "teach-source", "teach-target", "teach-model", "teach-steps", "teach-rehearsal"];
export const asks = "text";

/** The URL's pair: `target` (the English; absent: the example's, for the example sentence), `teachmodel`,
 * `teachsteps` and `rehearse` (1: on); checked against GET /api/teach's list and limits once it has come. */
export const state = {
  target: { read: (q) => ({ target: q.has("target") ? q.get("target") : null }), write: (p) => p.target },
  teachmodel: { read: (q) => ({ teachmodel: q.get("teachmodel") }), write: (p) => p.teachmodel || null },
  teachsteps: { read: (q) => ({ teachsteps: countOrNull(q, "teachsteps") }), write: (p) => (p.teachsteps === null ? null : String(p.teachsteps)) },
  rehearse: { read: (q) => ({ rehearse: q.get("rehearse") === "1" }), write: (p) => (p.rehearse ? "1" : null) },
};

let lab = null;
let info = null; // the answer drawn
let text = null; // the sentence at the top, as the page last asked about it

export function mount(context) {
  lab = context;
  const { part } = lab;
  part("teach-target").addEventListener("input", () => {
    lab.page.set({ target: part("teach-target").value });
    publish();
  });
  for (const id of ["teach-model", "teach-steps", "teach-rehearsal"]) part(id).addEventListener("change", changed);
  store.watch("text", (now) => {
    text = now;
    source();
    if (lab.page.target === null) part("teach-target").value = example(); // the reader's own English is never replaced
    publish();
  });
}

export const keys = () => [null];
/** Its failure is said in place of the sentence's line; the Teach button stays off without the set-up. */
export const panels = () => [lab.part("teach-source")];
export const wants = () => info === null; // asked once
export const ask = (text, signal) => fetchTeachInfo(signal);
export const failure = (error) => t("training.teach.setup-failure", { why: api.explain(error) });

export function draw(answer) {
  const first = info === null;
  info = answer;
  if (first) build();
  source();
  publish();
}

/** The English offered when the reader has typed none: the example's, for the example sentence only. */
function example() {
  return (text ?? lab.page.text).trim() === lab.catalog.defaults.text ? t("training.teach.example-target") : "";
}

/** The sentence taught: the page's text, beside the English. */
function source() {
  const line = lab.part("teach-source");
  const now = (text ?? lab.page.text).trim();
  line.textContent = now ? t("training.teach.source", { text: now }) : t("training.teach.source-none");
}

function build() {
  const { part, page } = lab;
  const { defaults, limits, models } = info;
  const model = part("teach-model");
  model.replaceChildren(...models.map((name) => new Option(name, name)));
  model.value = models.includes(page.teachmodel) ? page.teachmodel : defaults.model;
  const steps = part("teach-steps");
  Object.assign(steps, { min: 1, max: limits.max_steps });
  steps.value = page.teachsteps >= 1 && page.teachsteps <= limits.max_steps ? page.teachsteps : defaults.steps;
  part("teach-rehearsal").checked = page.rehearse;
  const target = part("teach-target");
  target.maxLength = limits.max_target_chars;
  target.value = page.target ?? example();
}

/** The settings the controls show (the server checks them again). */
function settings() {
  const { part } = lab;
  return { target: part("teach-target").value, model: part("teach-model").value,
    steps: Number(part("teach-steps").value), rehearsal: part("teach-rehearsal").checked };
}

/** A control changed: into the URL, and on. */
function changed() {
  const s = settings();
  lab.page.set({ teachmodel: s.model, teachsteps: s.steps, rehearse: s.rehearsal });
  publish();
}

function publish() {
  if (info) store.set("teach", { info, settings: settings() });
}

/** No figure of its own: what the server offers, in words and as a table. */
export function describe(answer, key, plot) {
  if (plot) return null;
  return t("training.teach.offers", { models: listOf(answer.models), steps: String(answer.limits.max_steps),
    chars: String(answer.limits.max_target_chars), pairs: String(answer.held_out) });
}

export function rows(answer) {
  return {
    caption: t("training.teach.offers-caption"),
    headers: [t("header.model"), t("training.teach.steps")],
    rows: answer.models.map((name) => [name, t("training.teach.steps-range", { max: String(answer.limits.max_steps) })]),
  };
}
