// The attention chapter, deriving attention, one output word at a time: for every recurrent model with
// attention, side by side (keyed by model), the raw scores e_j of the word the reader picked, the
// softmax weights (the model's own, and re-normalised at the temperature slider's T), and the
// blend of the encoder's states they give (POST /api/scores); the prose from the first model's
// answer. Each model's output words come from the one compare stream; a row clicked in an
// alignment grid picks the word (store `row`).
import * as api from "../api.js";
import { el } from "../dom.js";
import { decimal, label, t } from "../i18n.js";
import { fillStory, fmt, unitsRule } from "../facts.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, GATE_SCALE, OKABE_ITO, plotText, showEmpty, showToken, themed, tokenAxis } from "../plots.js";
import { modelFailure } from "../requests.js";
import * as store from "../store.js";
import { count } from "../url-state.js";

export const chapter = "attention";
/** The attention chapter: output piece `row`'s scores, weights, softmax(e / T) and blend for `model`. */
export const fetchScores = (text, model, row, temperature, signal) =>
  api.post("/api/scores", { text, model, row, temperature }, signal);
export const title = "scores";
export const figures = ["scores-panels", "scores-row", "scores-temperature", "scores-temperature-value", "scores-story"];
export const asks = "text";

/** The temperature slider's ends. */
const TEMPERATURES = [0.05, 20];

/** The URL's `row` (the output word, from 0) and `temp` (the temperature). */
export const state = {
  row: { read: (q) => ({ row: count(q.get("row")) }), write: (p) => String(p.row) },
  temp: {
    read(q) {
      const temp = Number(q.get("temp"));
      return { temp: q.has("temp") && temp >= TEMPERATURES[0] && temp <= TEMPERATURES[1] ? temp : 1 };
    },
    write: (p) => String(p.temp),
  },
};

const OWN = OKABE_ITO.blue; // Okabe-Ito blue: the model's weights (T = 1)
const AT_T = OKABE_ITO.vermillion; // vermillion: softmax(e / T)
const SCORE = OKABE_ITO.green;
const PAUSE_MS = 60; // the slider and the word picker ask after this pause

/** The slider's position (100 x log10 T) <-> T, three significant digits. */
const toT = (value) => Number((10 ** (Number(value) / 100)).toPrecision(3));
const toSlider = (t) => Math.round(100 * Math.log10(t));

let lab = null;
let models = []; // their names, in the catalogue's order
const targets = new Map(); // model -> its output pieces for the latest text
const panelsOf = new Map(); // model -> {figure, plot, blend, readout}
let temperature = 1;

export function mount(context) {
  lab = context;
  const { part, page, catalog } = lab;
  models = catalog.aligning.map((m) => m.name);
  for (const name of models) panelsOf.set(name, panel(catalog.info(name)));
  const container = part("scores-panels");
  container.replaceChildren(...[...panelsOf.values()].map((p) => p.figure));
  if (!models.length) container.append(label(el("p", "panel panel--note"), "attention.scores.none"));
  const select = part("scores-row");
  select.addEventListener("change", () => pick(Number(select.value)));
  const slider = part("scores-temperature");
  [slider.min, slider.max] = TEMPERATURES.map(toSlider).map(String);
  slider.value = String(toSlider(page.temp));
  temperature = page.temp; // a shared link's T exactly, not the slider's nearest step
  showTemperature();
  slider.addEventListener("input", () => {
    temperature = toT(slider.value);
    page.set({ temp: temperature });
    showTemperature();
    lab.ask({ lazy: true, pause: PAUSE_MS });
  });
  store.watch("row", pick);
}

export const keys = () => models;
export const panels = (name) => [panelsOf.get(name).plot, panelsOf.get(name).blend];

/** Model `name`'s words (the compare stream), then its picked word's scores (its last word if it wrote fewer); null: no word. */
export async function ask(text, signal, name) {
  const answer = await lab.compared(name, signal);
  targets.set(name, answer.target_tokens || []);
  fillRows();
  const words = targets.get(name);
  if (!words.length) return null;
  return fetchScores(text, name, Math.min(lab.page.row, words.length - 1), temperature, signal);
}

export function failure(error, name) {
  return error.model ? modelFailure(error, name) : t("attention.scores.failure", { why: api.explain(error) });
}

export function draw(answer, name) {
  const { plot, blend } = panelsOf.get(name);
  if (!answer) {
    for (const div of [plot, blend]) showEmpty(div, t("attention.scores.no-word", { name }));
    return;
  }
  drawScores(plot, answer);
  whenNear(blend, () => drawBlend(blend, answer));
  tell(name, answer);
}

/** The reader picked output word `row` (the picker, or a click on an alignment grid's row). */
function pick(row) {
  lab.page.set({ row });
  fillRows();
  lab.ask({ lazy: true, pause: PAUSE_MS });
}

function fillRows() {
  const lists = models.map((m) => targets.get(m) || []);
  const count = Math.max(0, ...lists.map((l) => l.length));
  const select = lab.part("scores-row");
  const options = Array.from({ length: count }, (_, i) => {
    const words = [...new Set(lists.filter((l) => i < l.length).map((l) => showToken(l[i])))];
    return new Option(t("attention.scores.row-option", { row: String(i + 1), words: words.join(" / ") }), String(i));
  });
  select.replaceChildren(...options);
  select.value = String(Math.min(lab.page.row, Math.max(count - 1, 0)));
}

function showTemperature() {
  lab.part("scores-temperature-value").textContent = `T = ${decimal(String(temperature))}`;
  lab.part("scores-temperature").setAttribute("aria-valuetext", t("attention.scores.temperature", { temperature: decimal(String(temperature)) }));
}

/** The prose's facts of one model's answer. */
function facts(name, answer) {
  const { query_token: query, source_tokens: source, weights } = answer;
  const top = weights.indexOf(Math.max(...weights));
  const change = answer.reweighted_entropy - answer.entropy;
  return {
    word: t("quote", { text: showToken(query) }), model: name, "max-weight": fmt(answer.max_weight),
    "top-source": t("quote", { text: showToken(source[top]) }), temperature: decimal(String(answer.temperature)), "max-reweighted": fmt(answer.reweighted_max_weight),
    "entropy-t": fmt(answer.reweighted_entropy), entropy: fmt(answer.entropy), "max-entropy": fmt(answer.max_entropy),
    direction: t(change > 0 ? "attention.scores.spread" : change < 0 ? "attention.scores.sharper" : "attention.scores.own"),
  };
}

function tell(name, answer) {
  const said = facts(name, answer);
  panelsOf.get(name).readout.textContent =
    t("attention.scores.readout", { word: said.word, top: said["top-source"], weight: said["max-weight"], entropy: said.entropy,
      entropyT: said["entropy-t"], temperature: said.temperature, max: said["max-entropy"] });
  if (name !== models[0]) return;
  fillStory(lab.part("scores-story"), said);
  store.headline(chapter, t("attention.scores.headline", { name, word: said.word, weight: said["max-weight"], top: said["top-source"] }));
}

/** The scores plot: the scores' range and the weight they give; the blend: the weights at T. */
export function describe(answer, name, plot) {
  if (!answer) return t("attention.scores.no-word", { name });
  const said = facts(name, answer);
  if (plot && plot === panelsOf.get(name).plot) {
    return t("attention.scores.plot-describe", { word: said.word, name, low: fmt(Math.min(...answer.scores)), high: fmt(Math.max(...answer.scores)),
      weight: said["max-weight"], top: said["top-source"] });
  }
  return t("attention.scores.describe", { word: said.word, name, weight: said["max-weight"], top: said["top-source"], temperature: said.temperature,
    reweighted: said["max-reweighted"], entropyT: said["entropy-t"], entropy: said.entropy, max: said["max-entropy"], direction: said.direction });
}

export function rows(answer, name, plot) {
  if (!answer) return { caption: t("attention.scores.no-word-caption", { name }), headers: [t("attention.scores.source-piece")], rows: [] };
  if (plot && plot === panelsOf.get(name).plot) {
    return {
      caption: t("attention.scores.plot-caption", { name, row: String(answer.row + 1), word: showToken(answer.query_token) }),
      headers: [t("attention.scores.source-piece"), t("attention.scores.score"), t("attention.scores.weight-plain")],
      rows: answer.source_tokens.map((tok, j) => [showToken(tok), fmt(answer.scores[j]), fmt(answer.weights[j])]),
    };
  }
  return {
    caption: t("attention.scores.caption", { name, row: String(answer.row + 1), word: showToken(answer.query_token), temperature: decimal(String(answer.temperature)) }),
    headers: [t("attention.scores.source-piece"), t("attention.scores.score"), t("attention.scores.weight"), `softmax(e_j / ${decimal(String(answer.temperature))})`],
    rows: answer.source_tokens.map((tok, j) => [showToken(tok), fmt(answer.scores[j]), fmt(answer.weights[j]), fmt(answer.reweighted[j])]),
  };
}

/** A figure per model: its formula, a readout, the scores and weights plot, the blend plot. */
function panel(info) {
  const figure = el("figure", "panel");
  const caption = el("figcaption", "panel__caption");
  const readout = el("span", "scores-panel__readout");
  caption.append(lab.catalog.summarize(el("span", "panel__title"), info), " ", el("code", "", info.name),
    el("code", "scores-panel__formula", ""), readout, el("span", "panel__note", ""));
  const plot = plotDiv(`scores-${info.name}`, "plot--scores", "attention.scores.plot-label", info.name);
  const blend = plotDiv(`blend-${info.name}`, "plot--blend", "attention.scores.blend-label", info.name);
  figure.append(caption, plot, blend);
  return { figure, plot, blend, readout };
}

function plotDiv(testid, size, key, name) {
  const div = el("div", `plot ${size}`);
  div.dataset.testid = testid;
  div.setAttribute("role", "group");
  label(div, key, { name }, "aria-label");
  return div;
}

function drawScores(div, answer) {
  const figure = div.closest("figure");
  figure.querySelector(".scores-panel__formula").textContent = answer.formula;
  const tokens = answer.source_tokens;
  const x = tokens.map((_, i) => i);
  const labels = tokens.map((tok) => plotText(showToken(tok)));
  const bar = (name, y, color, axis, extra = {}) => ({
    type: "bar", name, x, y, customdata: labels, marker: { color }, xaxis: "x", yaxis: axis,
    hovertemplate: `<b>%{customdata}</b><br>${t("plot.hover-value", { label: name, value: "%{y:.4g}" })}<extra></extra>`, ...extra,
  });
  const data = [
    bar(t("attention.scores.score"), answer.scores, SCORE, "y", { showlegend: false }),
    bar(t("attention.scores.weight"), answer.weights, OWN, "y2"),
    bar(`softmax(e_j / ${decimal(String(answer.temperature))})`, answer.reweighted, AT_T, "y2"),
  ];
  const layout = baseLayout({
    margin: { l: 52, r: 12, t: 28, b: 60 },
    barmode: "group",
    xaxis: tokenAxis(tokens, { anchor: "y2", tickangle: tokens.length > 8 ? -45 : 0 }),
    yaxis: { domain: [0.6, 1], title: { text: t("attention.scores.score-axis") }, gridcolor: themed("grid"), zeroline: true },
    yaxis2: { domain: [0, 0.48], range: [0, 1], title: { text: t("attention.scores.weight-axis") }, gridcolor: themed("grid") },
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
  });
  div.dataset.row = String(answer.row);
  div.dataset.temperature = String(answer.temperature);
  drawPlot(div, data, layout, `${answer.model}-scores-row${answer.row + 1}-T${answer.temperature}`, answer);
}

/** The encoder states h_j on the units shown, and below them their blend, the context. */
function drawBlend(div, answer) {
  const { blend, source_tokens: tokens, weights } = answer;
  div.closest("figure").querySelector(".panel__note").textContent =
    t("attention.scores.blend-note", { rule: unitsRule(blend, "attention.scores.units-rule") });
  const labels = [...tokens.map((tok, j) => t("attention.scores.token-weight", { token: showToken(tok), weight: fmt(weights[j]) })), t("attention.scores.context")];
  const z = [...blend.states, blend.context];
  const reach = Math.max(...z.flat().map(Math.abs), 1e-9);
  const trace = {
    type: "heatmap", z, x: blend.units.map((_, i) => i), y: labels.map((_, i) => i),
    customdata: labels.map((r) => blend.units.map((u) => [plotText(r), u])),
    hovertemplate: t("attention.scores.blend-hover"),
    colorscale: GATE_SCALE, zmin: -reach, zmax: reach, showscale: false, xgap: 1, ygap: 1, meta: { colorbarTitle: "value" },
  };
  const layout = baseLayout({
    margin: { l: 110, r: 12, t: 8, b: 40 },
    xaxis: { title: { text: t("attention.scores.units", { shown: String(blend.units.length), hidden: String(blend.hidden_size) }) }, showticklabels: false, showgrid: false, zeroline: false },
    yaxis: tokenAxis(labels, { autorange: "reversed" }),
    shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: labels.length - 1.5, y1: labels.length - 1.5, line: { color: themed("ink"), width: 2 } }],
  });
  drawPlot(div, [trace], layout, `${answer.model}-blend-row${answer.row + 1}`, answer);
}
