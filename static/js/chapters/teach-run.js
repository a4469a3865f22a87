// Teach it a pair (the training chapter), the run: the reader's French sentence and the English they
// want, taught to a private copy of a model (POST /api/teach, models/teach.py, with the settings of
// teach.js, store `teach`). As the streamed answer arrives: the loss on the pair per step, each
// layer's gradient and step size at the latest step, the copy's translation and its attention map
// redrawn; at the end, what it cost: the held-out BLEU before and after, and three other sentences
// before and after. Before the run, the reader guesses how many steps it takes to write their English;
// the verdict comes from the run's own first step that wrote it. Each figure's sentence and table
// follow the stream (lab.shown).
import * as api from "../api.js";
import { el } from "../dom.js";
import { fmt, mapTable, strongest, tenths } from "../facts.js";
import { listOf, number, t } from "../i18n.js";
import { OKABE_ITO, alignmentLayout, attentionTrace, baseLayout, draw as drawPlot, plotText, showEmpty, themed } from "../plots.js";
import * as store from "../store.js";

export const chapter = "training";
/** POST /api/teach: one run; each streamed line (JSON text) goes to `onLine` as it arrives. */
export const fetchTeach = (body, signal, onLine) => api.lines("/api/teach", body, signal, onLine);
export const title = "teaching run";
export const figures = ["teach-start", "teach-stop", "teach-guess", "teach-verdict", "teach-status", "teach-translation",
  "teach-loss", "teach-layers", "teach-map", "teach-cost"];
export const asks = "self";

// the guess's choices: the steps each covers (`more`: more than 15, or never within the run)
const GUESSES = { 1: [1, 1], "2-5": [2, 5], "6-15": [6, 15], more: [16, Infinity] };
// a refused field (422) -> its words
const INVALID = { text: "training.teach.invalid.text", target: "training.teach.invalid.target",
  model: "training.teach.invalid.model", steps: "training.teach.invalid.steps" };

let lab = null;
let setup = null; // {info, settings}: what teach.js offers and the reader chose
let run = null; // the latest: {body, guess, start, steps: [lines], end, done, stopped}
let running = false;

export function mount(context) {
  lab = context;
  const { part } = lab;
  part("teach-start").addEventListener("click", start);
  part("teach-stop").addEventListener("click", () => {
    if (run) run.stopped = true;
    lab.stop();
  });
  waiting();
  store.watch("teach", (value) => {
    setup = value;
    part("teach-start").disabled = running;
  });
}

export const keys = () => [null];
export const panels = () => [lab.part("teach-status")];

/** The run of the latest start, its lines drawn as they stream in; resolves to the run. */
export async function ask(text, signal) {
  const mine = run;
  mine.body.text = text;
  await fetchTeach(mine.body, signal, (line) => take(mine, JSON.parse(line)));
  return mine;
}

/** The run ended on its own (or the page's language changed: everything said again). */
export function draw(answer) {
  if (running && answer !== run) return; // an earlier run's answer: the one streaming is drawn as it comes
  render(answer);
}

export function failure(error) {
  const detail = error instanceof api.ApiError && error.status === 422 && Array.isArray(error.body?.detail) ? error.body.detail : [];
  const field = detail.map((d) => d.loc?.at(-1)).find((name) => INVALID[name]);
  if (!field) return t("training.teach.failure", { why: api.explain(error) });
  const limits = setup?.info.limits;
  const long = detail.some((d) => d.loc?.at(-1) === field && d.type === "string_too_long");
  return t(field === "target" && long ? "training.teach.invalid.target-long" : INVALID[field], {
    max: String(field === "text" ? lab.catalog.limits.max_chars : field === "steps" ? limits?.max_steps : limits?.max_target_chars),
    model: setup?.settings.model ?? "" });
}

async function start() {
  if (running || !setup) return;
  const { target, model, steps, rehearsal } = setup.settings;
  const guess = lab.root.querySelector("input[name=teach-guess]:checked")?.value ?? null;
  run = { body: { text: "", target, model, steps, rehearsal }, guess, start: null, steps: [], end: null, done: null, stopped: false };
  busy(true);
  waiting();
  lab.part("teach-verdict").textContent = "";
  say(t("training.teach.starting", { model, count: steps }));
  await lab.ask();
  busy(false);
  if (run.stopped && !run.done) render(run);
}

function take(mine, line) {
  if (mine !== run) return;
  if (line.queued) return say(t("training.teach.queued", { place: String(line.queued.place), seconds: String(line.queued.starts_in) }));
  if (line.start) mine.start = line.start;
  else if (line.step !== undefined) mine.steps.push(line);
  else if (line.end) mine.end = line.end;
  else if (line.done) mine.done = line;
  render(mine);
  lab.shown(mine); // the sentences and tables in step with every streamed line
}

function busy(on) {
  running = on;
  const { part } = lab;
  part("teach-start").disabled = on || !setup;
  part("teach-stop").disabled = !on;
  for (const radio of lab.root.querySelectorAll("input[name=teach-guess]")) radio.disabled = on;
  document.documentElement.dataset.teachRunning = on ? "true" : "";
}

function say(message) {
  const status = lab.part("teach-status");
  delete status.dataset.i18n; // no longer the template's words
  status.classList.remove("is-missing");
  status.textContent = message;
}

/** Before any run: each figure says what it will show. */
function waiting() {
  const { part } = lab;
  showEmpty(part("teach-loss"), ["training.teach.loss-waiting"]);
  showEmpty(part("teach-layers"), ["training.teach.layers-waiting"]);
  showEmpty(part("teach-map"), ["training.teach.map-waiting"]);
  part("teach-translation").textContent = "";
  part("teach-bleu").textContent = "";
  part("teach-examples").hidden = true;
  part("teach-examples").replaceChildren();
}

const last = (r) => r.steps.at(-1) ?? null;
/** The first step whose translation was the reader's English (null: none yet). */
const learnedAt = (r) => r.end?.learned_at ?? r.steps.find((s) => s.learned)?.step ?? null;

/** Everything the run has said so far, drawn. */
function render(r) {
  if (r.done?.error) say(t("training.teach.stopped-early", { why: r.done.error }));
  else if (r.end || r.done) say(t("training.teach.done", { model: r.body.model, count: r.steps.length }));
  else if (r.stopped) say(t("training.teach.stopped", { count: r.steps.length }));
  else if (last(r)) say(t("training.teach.step", { step: String(last(r).step), steps: String(r.body.steps), loss: fmt(last(r).loss) }));
  else if (r.start) say(t("training.teach.started", { model: r.start.model, count: r.body.steps }));
  translation(r);
  if (r.steps.length) {
    drawLoss(r);
    drawLayers(r);
  }
  if (r.start) drawMap(r);
  cost(r);
  verdict(r);
}

function translation(r) {
  const line = lab.part("teach-translation");
  const now = last(r)?.reading ?? r.start?.reading;
  if (!now) return;
  const step = last(r)?.step;
  const learned = step === undefined ? false : last(r).learned;
  line.textContent = step === undefined ? t("training.teach.translation-before", { translation: now.translation })
    : t(learned ? "training.teach.translation-learned" : "training.teach.translation", { step: String(step), translation: now.translation });
  line.classList.toggle("is-learned", learned);
}

/** The guess's verdict, once the run has said when it first wrote the English (or ended without). */
function verdict(r) {
  const node = lab.part("teach-verdict");
  const at = learnedAt(r);
  const over = Boolean(r.end || r.done || r.stopped);
  if (at === null && !over) return void (node.textContent = "");
  const guess = r.guess ? t(`training.teach.guess.${r.guess}`) : null;
  if (at === null) {
    const said = { count: r.steps.length, guess };
    if ((r.stopped || r.done?.error) && !r.end) return void (node.textContent = t("training.teach.verdict.stopped", said));
    const right = r.guess === "more";
    node.textContent = t(guess === null ? "training.teach.verdict.never" : right ? "training.teach.verdict.never-right" : "training.teach.verdict.never-wrong", said);
    return;
  }
  const [low, high] = GUESSES[r.guess] ?? [];
  const right = at >= low && at <= high;
  node.textContent = t(guess === null ? "training.teach.verdict.at" : right ? "training.teach.verdict.right" : "training.teach.verdict.wrong",
    { step: String(at), guess });
}

function drawLoss(r) {
  const x = r.steps.map((s) => s.step);
  const traces = [{ type: "scatter", mode: "lines+markers", name: plotText(t("training.teach.pair-loss")), x, y: r.steps.map((s) => s.loss),
    line: { color: OKABE_ITO.blue, width: 2.5 }, marker: { size: 5 },
    customdata: r.steps.map((s) => plotText(s.reading.translation)),
    hovertemplate: t("training.teach.loss-hover") }];
  if (r.body.rehearsal) {
    traces.push({ type: "scatter", mode: "lines+markers", name: plotText(t("training.teach.rehearsal-loss")), x, y: r.steps.map((s) => s.rehearsal_loss),
      line: { color: OKABE_ITO.vermillion, width: 2, dash: "dash" }, marker: { size: 5, symbol: "diamond" } });
  }
  drawPlot(lab.part("teach-loss"), traces, baseLayout({
    xaxis: { title: { text: t("training.curves.step") }, range: [0.5, r.body.steps + 0.5], gridcolor: themed("grid"), zeroline: false },
    yaxis: { title: { text: t("training.teach.loss-axis") }, rangemode: "tozero", gridcolor: themed("grid"), zeroline: false },
    legend: { orientation: "h", y: 1.15 },
  }), "teach-loss", { start: r.start, steps: r.steps.map(({ step, loss, rehearsal_loss, reading }) => ({ step, loss, rehearsal_loss, translation: reading.translation })) });
}

function drawLayers(r) {
  const now = last(r);
  const names = now.layers.map((l) => plotText(l.name));
  const bar = (key, name, colour) => ({ type: "bar", name: plotText(name), x: names, y: now.layers.map((l) => l[key]), marker: { color: colour },
    hovertemplate: `<b>%{x}</b><br>${plotText(name)} %{y:.3g}<extra></extra>` });
  drawPlot(lab.part("teach-layers"), [bar("gradient", t("training.teach.gradient"), OKABE_ITO.blue), bar("moved", t("training.teach.moved"), OKABE_ITO.vermillion)],
    baseLayout({
      barmode: "group",
      margin: { l: 56, r: 12, t: 10, b: 80 },
      xaxis: { title: { text: t("training.teach.layers-axis", { step: String(now.step) }) }, tickangle: -30, automargin: true },
      yaxis: { title: { text: t("training.teach.size-axis") }, type: "log", gridcolor: themed("grid") },
      legend: { orientation: "h", y: 1.02, yanchor: "bottom" },
    }), "teach-layers", { step: now.step, layers: now.layers });
}

/** The copy's map now: output pieces (its translation, then its end) x the sentence's pieces. */
function mapOf(r) {
  const line = last(r);
  const reading = line?.reading ?? r.start?.reading;
  if (!reading?.map) return null;
  return { rows: reading.pieces, cols: r.start.source, weights: reading.map, step: line?.step ?? 0 };
}

function drawMap(r) {
  const div = lab.part("teach-map");
  const map = mapOf(r);
  if (!map) return showEmpty(div, ["training.teach.no-map", { model: r.body.model }]);
  const layout = alignmentLayout(map);
  layout.title = { text: plotText(t(map.step ? "training.teach.at-step" : "training.teach.before-steps", { step: String(map.step) })), font: { size: 12 }, x: 0.02 };
  layout.margin = { ...layout.margin, t: 28 };
  drawPlot(div, [attentionTrace(map)], layout, "teach-map", map);
}

/** What it cost: held-out BLEU before and after, and the example sentences before and after. */
function cost(r) {
  const { part } = lab;
  const bleu = part("teach-bleu");
  const table = part("teach-examples");
  if (!r.start) return;
  const before = r.start.before;
  const after = r.end?.after;
  bleu.textContent = after ? t("training.teach.bleu", { pairs: String(before.pairs), before: tenths(before.bleu), after: tenths(after.bleu), change: signed(r.end.bleu_change) })
    : t("training.teach.bleu-before", { pairs: String(before.pairs), before: tenths(before.bleu) });
  const caption = el("caption", "", t("training.teach.examples-caption"));
  const head = el("thead");
  const headRow = el("tr");
  for (const key of ["training.teach.example-source", "training.teach.example-reference", "training.teach.example-before", "training.teach.example-after"]) {
    const th = el("th", "", t(key));
    th.scope = "col";
    headRow.append(th);
  }
  head.append(headRow);
  const body = el("tbody");
  r.start.examples.forEach((example, i) => {
    const tr = el("tr");
    const source = el("th", "", example.source);
    source.scope = "row";
    source.lang = "fr";
    const cells = [example.reference, before.examples[i], after ? after.examples[i] : "…"].map((text) => {
      const td = el("td", "", text);
      td.lang = "en";
      return td;
    });
    tr.append(source, ...cells);
    body.append(tr);
  });
  table.replaceChildren(caption, head, body);
  table.hidden = false;
}

const signed = (x) => number(x, { signDisplay: "exceptZero", minimumFractionDigits: 1, maximumFractionDigits: 1 });

/** The loss plot: where the pair's loss went; the layers' plot: each layer's sizes at the latest step; the map: what each output piece looks at. */
export function describe(r, key, plot) {
  if (!plot || !r.steps.length && plot.id !== "teach-map") return null;
  if (plot.id === "teach-map") {
    const map = mapOf(r);
    return map && t("training.teach.map-describe", { model: r.body.model, step: String(map.step), looks: strongest(map) });
  }
  const first = r.steps[0];
  const now = last(r);
  if (plot.id === "teach-loss") {
    const said = { first: fmt(first.loss), last: fmt(now.loss), step: String(now.step) };
    if (!r.body.rehearsal) return t("training.teach.loss-describe", said);
    return t("training.teach.loss-describe-rehearsal", { ...said, rfirst: fmt(first.rehearsal_loss), rlast: fmt(now.rehearsal_loss) });
  }
  const top = now.layers.reduce((a, b) => (b.gradient > a.gradient ? b : a));
  return t("training.teach.layers-describe", { step: String(now.step), count: now.layers.length, layer: top.name, gradient: fmt(top.gradient),
    each: listOf(now.layers.map((l) => t("training.teach.layer-one", { layer: l.name, gradient: fmt(l.gradient), moved: fmt(l.moved) }))) });
}

export function rows(r, key, plot) {
  if (plot?.id === "teach-map") {
    const map = mapOf(r);
    return mapTable(map, t("training.teach.map-caption", { model: r.body.model, step: String(map.step) }));
  }
  if (plot?.id === "teach-layers") {
    const now = last(r);
    return { caption: t("training.teach.layers-caption", { step: String(now.step) }),
      headers: [t("training.teach.layer"), t("training.teach.gradient"), t("training.teach.moved")],
      rows: now.layers.map((l) => [l.name, fmt(l.gradient), fmt(l.moved)]) };
  }
  return { caption: t("training.teach.loss-caption", { model: r.body.model }),
    headers: [t("header.step"), t("training.teach.pair-loss"), ...(r.body.rehearsal ? [t("training.teach.rehearsal-loss")] : []), t("header.translation")],
    rows: r.steps.map((s) => [String(s.step), fmt(s.loss), ...(r.body.rehearsal ? [fmt(s.rehearsal_loss)] : []), s.reading.translation]) };
}
