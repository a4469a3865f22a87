// The gradients chapter, vanishing gradients: how much gradient reaches each input position of the recurrent
// encoders without attention (log scale), as shipped and at their seeded initialization; the
// per-step factors behind those curves; how open an LSTM's gates are at each token; and the prose,
// whose every number comes from the same answer (vanishing-story.js).
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, GATE_SCALE, plotText, showEmpty, showToken, themed, tokenAxis } from "../plots.js";
import { couldNot } from "../requests.js";
import { FACTORS, drawStepFactors } from "../step-factors.js";
import * as store from "../store.js";
import { storyFacts } from "../vanishing-story.js";

export const chapter = "gradients";
/** The gradients chapter: curves trained and at initialization, with their per-step factors. */
export const fetchGradients = (text, length, signal) =>
  api.post("/api/gradients", { text, length, initialized: true, factors: true }, signal);
export const title = "gradient experiment";
export const figures = ["grad-plot", "factor-plot", "gates-plot", "grad-length", "grad-length-value", "factor-view",
  "gate-view", "gates-model", "vanishing-story"];
export const asks = "text";

/** The URL's `len` (the input length) and `factor` (the per-step view, checked against FACTORS as it mounts). */
export const state = {
  len: {
    read(q, { catalog, opening }) {
      const length = Number(q.get("len"));
      const fits = Number.isInteger(length) && length >= 1 && length <= catalog.limits.max_gradient_length;
      return { length: fits ? length : opening.length };
    },
    write: (p) => String(p.length),
  },
  factor: { read: (q) => ({ factor: q.get("factor") || "shrink" }), write: (p) => p.factor },
};

// The input-length slider asks for the heaviest experiment when the reader stops dragging: after
// a longer pause than typing's, so that a slow drag does not ask at every stop.
const MEASURE_PAUSE_MS = 120;
const GATE_NAMES = ["input", "forget", "output"];
let lab = null;
let answer = null; // the answer drawn

/** The controls: the input length (len), the factor view (factor), the gate view. */
export function mount(context) {
  lab = context;
  const { part, page, catalog } = lab;
  const factor = part("factor-view");
  factor.value = FACTORS[page.factor] ? page.factor : "shrink";
  if (factor.value !== page.factor) page.set({ factor: factor.value }); // the URL named no such view
  factor.addEventListener("change", () => {
    page.set({ factor: factor.value });
    if (answer) whenNear(part("factor-plot"), drawFactors);
  });
  const slider = part("grad-length");
  slider.max = String(catalog.limits.max_gradient_length);
  slider.value = String(page.length);
  showLength(page.length);
  slider.addEventListener("input", () => {
    showLength(Number(slider.value));
    page.set({ length: Number(slider.value) });
    lab.ask({ pause: MEASURE_PAUSE_MS });
  });
  part("gate-view").addEventListener("change", () => {
    if (answer) whenNear(part("gates-plot"), drawGates);
  });
}

function showLength(length) {
  lab.part("grad-length-value").textContent = t("gradients.gradients.tokens", { count: length });
}

export const keys = () => [null];
export const panels = () => ["grad-plot", "factor-plot", "gates-plot"].map(lab.part);
/** The sentence's tokens, repeated up to the URL's length. */
export const ask = (text, signal) => fetchGradients(text, lab.page.length, signal);
export const failure = (error) => couldNot(t("gradients.gradients.what"), error, null);

export function draw(next) {
  answer = next;
  drawGradients(lab.part("grad-plot"), answer, lab.catalog);
  drawFactors();
  drawGates();
  const facts = storyFacts(answer, lab.catalog);
  fillStory(lab.part("vanishing-story"), facts);
  store.headline(chapter, t("gradients.gradients.headline", {
    count: Number(facts.distance), plain: facts.plain, plainTrained: facts["plain-trained"], gated: facts.gated, gatedTrained: facts["gated-trained"],
  }));
}

function drawFactors() {
  drawStepFactors(lab.part("factor-plot"), answer, lab.part("factor-view").value, lab.catalog);
}

function drawGates() {
  const model = (answer.gates && answer.gates.model) || "";
  lab.part("gates-model").textContent = model;
  plotGates(lab.part("gates-plot"), answer, lab.part("gate-view").value, model);
}

const curveName = (c) => t((c.weights || "trained") === "trained" ? "gradients.gradients.shipped" : "gradients.gradients.initial", { model: c.model });
const measured = (shown) => ((shown && shown.curves) || []).filter((c) => c.distance && c.distance.length);

/** Each figure in words: the curves' reach, the factors' run, or the gates' extremes. */
export function describe(shown, key, plot) {
  if (plot?.id === "factor-plot") return describeFactors(shown, lab.part("factor-view").value);
  if (plot?.id === "gates-plot") return describeGates(shown, lab.part("gate-view").value);
  const facts = storyFacts(shown, lab.catalog);
  return t("gradients.gradients.describe", {
    length: facts.length, count: Number(facts.distance), plainTrained: facts["plain-trained"], plain: facts.plain,
    plainInitialized: facts["plain-initialized"], gatedTrained: facts["gated-trained"], gated: facts.gated, gatedInitialized: facts["gated-initialized"],
  });
}

export function rows(shown, key, plot) {
  const factor = plot?.id === "factor-plot" ? lab.part("factor-view").value : null;
  if (plot?.id === "gates-plot") return gateRows(shown, lab.part("gate-view").value);
  const curves = factor ? (shown.curves || []).filter((c) => Array.isArray(c[factor])) : measured(shown);
  const values = (c) => (factor ? c[factor] : c.norm);
  const longest = Math.max(0, ...curves.map((c) => values(c).length));
  return {
    caption: factor ? t("gradients.factors.caption", { title: FACTORS[factor].title() }) : t("gradients.gradients.caption"),
    headers: [t("gradients.gradients.before-end"), ...curves.map(curveName)],
    rows: Array.from({ length: longest }, (_, i) => [String(i), ...curves.map((c) => fmt(values(c)[i]))]),
  };
}

function describeFactors(shown, factor) {
  const curves = (shown.curves || []).filter((c) => Array.isArray(c[factor]) && c[factor].length);
  if (!curves.length) return t("gradients.factors.none-of", { title: FACTORS[factor].title() });
  return t("gradients.factors.describe", { title: FACTORS[factor].title(), curves: curves.map((c) => t("gradients.factors.describe-one", {
    name: curveName(c), end: fmt(c[factor][0]), back: fmt(c[factor].at(-1)), count: c[factor].length - 1 })).join(t("list.separator")) });
}

const gatesTitle = (view) => (view === "mean" ? t("gradients.gates.averaged") : t("gradients.gates.most-active", { gate: t(`gradients.gates.${view}`) }));

function describeGates(shown, view) {
  const m = gateMatrix(shown, view);
  if (!m || !m.values.length) return t("gradients.gates.none");
  const tokens = m.tokens;
  const said = m.values.map((values, r) => {
    const high = values.indexOf(Math.max(...values));
    const low = values.indexOf(Math.min(...values));
    return t("gradients.gates.open", { row: m.rows[r], high: showToken(tokens[high]), highValue: fmt(values[high]),
      low: showToken(tokens[low]), lowValue: fmt(values[low]) });
  });
  const shown3 = said.slice(0, 3).join(t("list.separator"));
  const about = { model: shown.gates.model, title: gatesTitle(view), said: shown3, count: said.length - 3 };
  return t(said.length > 3 ? "gradients.gates.describe-more" : "gradients.gates.describe", about);
}

function gateRows(shown, view) {
  const m = gateMatrix(shown, view) || { rows: [], values: [], tokens: [] };
  return {
    caption: t("gradients.gates.caption", { model: shown.gates?.model || "LSTM", title: gatesTitle(view) }),
    headers: ["", ...m.tokens.slice(0, m.values[0]?.length ?? 0).map(showToken)],
    rows: m.values.map((values, r) => [m.rows[r], ...values.map(fmt)]),
  };
}

function drawGradients(div, response, catalog) {
  const curves = measured(response);
  if (!curves.length) {
    showEmpty(div, t("gradients.gradients.none"));
    return;
  }
  const data = curves.map((c) => {
    const weights = c.weights || "trained";
    const name = plotText(curveName(c));
    return {
      type: "scatter",
      mode: c.distance.length > 40 ? "lines" : "lines+markers",
      name,
      x: c.distance,
      y: c.norm.map((v) => (v > 0 ? v : null)), // a log axis cannot show 0 (underflow): left as gaps
      line: { color: catalog.colour(c.model), width: 2.5, dash: weights === "trained" ? "solid" : "dot" },
      marker: { size: 5, symbol: catalog.marker(c.model) },
      hovertemplate: t("gradients.gradients.hover", { name }),
    };
  });
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: t("gradients.gradients.x-axis") }, zeroline: false, gridcolor: themed("grid") },
    yaxis: { title: { text: t("gradients.gradients.y-axis") }, type: "log", exponentformat: "power", gridcolor: themed("grid"), zeroline: false },
    legend: { x: 1, xanchor: "right", y: 1, bgcolor: "rgba(255,255,255,0.85)" },
  });
  drawPlot(div, data, layout, `gradient-norm-${curves.map((c) => c.model).join("-vs-")}`, response);
}

/**
 * The gate activations to draw. `gates` (API: /api/gradients) holds, per gate, a token x unit
 * matrix for the units that vary most, and `mean`: each gate's average over all units per token.
 * view "mean": rows are the three gates; view "input" | "forget" | "output": rows are units.
 */
function gateMatrix(response, view) {
  const g = response && response.gates;
  if (!g) return null;
  const tokens = response.tokens || [];
  if (view === "mean") {
    const mean = g.mean || {};
    const names = GATE_NAMES.filter((n) => Array.isArray(mean[n]));
    if (!names.length) return null;
    return { rows: names.map((n) => t(`gradients.gates.${n}`)), values: names.map((n) => mean[n]), tokens, rowTitle: "" };
  }
  const perToken = g[view];
  if (!Array.isArray(perToken) || !perToken.length) return null;
  const units = g.units || perToken[0].map((_, i) => i);
  // token x unit -> unit x token, so tokens run along the x axis in both views
  const values = units.map((_, u) => perToken.map((row) => row[u]));
  return { rows: units.map((u) => t("recurrence.recurrence.unit-n", { unit: String(u) })), values, tokens,
    rowTitle: t("gradients.gates.most-active", { gate: t(`gradients.gates.${view}`) }) };
}

function plotGates(div, response, view, model) {
  const m = gateMatrix(response, view);
  if (!m || !m.values.length || !m.tokens.length) {
    showEmpty(div, t("gradients.gates.none"));
    return;
  }
  const tokens = m.tokens.slice(0, m.values[0].length);
  const labels = tokens.map((tok) => plotText(showToken(tok)));
  const gateRows = m.rows.map(plotText);
  const trace = {
    type: "heatmap",
    z: m.values,
    x: tokens.map((_, i) => i),
    y: gateRows.map((_, i) => i),
    customdata: gateRows.map((name) => labels.map((tok, i) => [name, tok, i + 1])),
    hovertemplate: t("gradients.gates.hover"),
    colorscale: GATE_SCALE,
    zmin: 0,
    zmax: 1,
    xgap: tokens.length > 60 ? 0 : 1,
    ygap: gateRows.length > 8 ? 0 : 2,
    showscale: false,
    meta: { colorbarTitle: "activation" },
  };
  const layout = baseLayout({
    margin: { l: 84, r: 12, t: 10, b: 70 },
    xaxis: tokenAxis(tokens, {
      tickangle: tokens.length > 8 ? -60 : 0,
      automargin: false, // rotated labels would otherwise cost a second layout pass per redraw
    }, 20),
    yaxis: {
      ...tokenAxis(m.rows, { autorange: "reversed" }),
      ...(gateRows.length > 8 ? { showticklabels: false, title: { text: plotText(m.rowTitle) } } : {}),
    },
  });
  div.dataset.view = view;
  drawPlot(div, [trace], layout, `${model}-gates-${view}`, response);
}
