// The scaling chapter, scaling by sqrt(d_k): the softmax of q . k saturates as d_k grows (sampled N(0, 1)
// vectors, POST /api/scaling), and dividing by sqrt(d_k) keeps it soft; the Transformer's own
// heads on the typed sentence, their scores' spread with and without the scale. The prose is
// filled from the answer: every number and every "larger" or "smaller" is computed here.
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, OKABE_ITO, themed } from "../plots.js";
import { couldNot } from "../requests.js";
import * as store from "../store.js";

export const chapter = "scaling";
/** The scaling chapter: softmax saturation against d_k, sampled and on the model's own scores. */
export const fetchScaling = (text, signal) => api.post("/api/scaling", { text }, signal);
export const title = "scaling experiment";
export const figures = ["scaling-curves", "scaling-heads", "scaling-story"];
export const asks = "text";

const RAW = OKABE_ITO.vermillion;
const SCALED = OKABE_ITO.blue;
const QUANTITIES = [["max_weight", "scaling.scaling.max-weight"], ["entropy", "scaling.scaling.entropy"], ["gradient", "scaling.scaling.gradient"]];
const QUANTITY = Object.fromEntries(QUANTITIES);

const than = (a, b) => t(a > b ? "scaling.scaling.larger" : a < b ? "scaling.scaling.smaller" : "scaling.scaling.same");

let lab = null;

/** The facts the prose states, each a string. */
function scalingFacts(answer) {
  const { sampled, d_k: dk, summary } = answer;
  const [raw, scaled] = [sampled.at_model_d_k.unscaled, sampled.at_model_d_k.scaled];
  const [first, last] = [sampled.unscaled[0], sampled.unscaled[sampled.unscaled.length - 1]];
  const cross = summary.cross || summary.encoder;
  return {
    model: answer.model, "d-k": String(dk), keys: String(sampled.keys), draws: String(sampled.draws),
    distribution: t("scaling.scaling.distribution"), // the server draws them so (API `sampled.distribution`)
    "std-small-dk": String(first.d_k), "std-small": fmt(first.score_std),
    "std-large-dk": String(last.d_k), "std-large": fmt(last.score_std),
    "raw-max": fmt(raw.max_weight), "scaled-max": fmt(scaled.max_weight),
    "raw-entropy": fmt(raw.entropy), "scaled-entropy": fmt(scaled.entropy), "max-entropy": fmt(Math.log(sampled.keys)),
    "raw-gradient": fmt(raw.gradient), "scaled-gradient": fmt(scaled.gradient),
    "gradient-direction": than(scaled.gradient, raw.gradient),
    "heads-raw-std": fmt(cross.raw_std), "heads-scaled-std": fmt(cross.scaled_std),
    "heads-raw-max": fmt(cross.unscaled_max_weight), "heads-scaled-max": fmt(cross.max_weight),
    "heads-kind": t(summary.cross ? "scaling.scaling.cross" : "scaling.scaling.encoder"),
  };
}

export function mount(context) {
  lab = context;
}

export const keys = () => [null];
export const panels = () => [lab.part("scaling-curves"), lab.part("scaling-heads")];
export const ask = (text, signal) => fetchScaling(text, signal);
export const failure = (error) => couldNot(t("scaling.scaling.what"), error);

export function draw(answer) {
  const facts = scalingFacts(answer);
  fillStory(lab.part("scaling-story"), facts);
  store.headline(chapter, t("scaling.scaling.headline", { model: answer.model, dk: String(answer.d_k), raw: facts["raw-max"], scaled: facts["scaled-max"] }));
  const [curves, heads] = panels();
  whenNear(curves, () => drawCurves(curves, answer));
  whenNear(heads, () => drawHeads(heads, answer));
}

export function describe(answer, key, plot) {
  const f = scalingFacts(answer);
  const said = {
    keys: f.keys, small: f["std-small"], smallDk: f["std-small-dk"], large: f["std-large"], largeDk: f["std-large-dk"], model: f.model,
    dk: f["d-k"], rawMax: f["raw-max"], scaledMax: f["scaled-max"], rawGradient: f["raw-gradient"], scaledGradient: f["scaled-gradient"],
  };
  if (plot?.id === "scaling-curves") return t("scaling.scaling.curves-describe", said);
  if (plot?.id === "scaling-heads") {
    const range = (k) => t("scaling.scaling.range", { low: fmt(Math.min(...answer.heads.map((h) => h[k]))), high: fmt(Math.max(...answer.heads.map((h) => h[k]))) });
    return t("scaling.scaling.heads-describe", { model: f.model, count: answer.heads.length, raw: range("raw_std"), scaled: range("scaled_std") });
  }
  return t("scaling.scaling.describe", said);
}

export function rows(answer, key, plot) {
  if (plot?.id === "scaling-heads") {
    return {
      caption: t("scaling.scaling.heads-caption", { model: answer.model }),
      headers: [t("heads.heads-lab.head"), t("scaling.scaling.without"), t("scaling.scaling.with")],
      rows: answer.heads.map((h) => [t("scaling.scaling.head", { kind: t(`kind.${h.kind}`), layer: String(h.layer + 1), head: String(h.head + 1) }),
        fmt(h.raw_std), fmt(h.scaled_std)]),
    };
  }
  const { unscaled, scaled } = answer.sampled;
  const pair = (key) => ["q · k", "q · k / √d_k"].map((score) => t("scaling.scaling.column", { quantity: t(QUANTITY[key]), score }));
  return {
    caption: t("scaling.scaling.caption", { keys: String(answer.sampled.keys), draws: String(answer.sampled.draws), dk: String(answer.d_k) }),
    headers: ["d_k", t("scaling.scaling.spread"), ...QUANTITIES.flatMap(([key]) => pair(key))],
    rows: unscaled.map((r, i) => [String(r.d_k), fmt(r.score_std), ...QUANTITIES.flatMap(([key]) => [fmt(r[key]), fmt(scaled[i][key])])]),
  };
}

function drawCurves(div, answer) {
  const { sampled, d_k: dk } = answer;
  const data = [];
  QUANTITIES.forEach(([key, said], i) => {
    const label = t(said);
    const axis = i ? String(i + 1) : "";
    for (const [rows, name, color] of [[sampled.unscaled, "q · k", RAW], [sampled.scaled, "q · k / √d_k", SCALED]]) {
      data.push({ type: "scatter", mode: "lines+markers", name, legendgroup: name, showlegend: i === 0, x: rows.map((r) => r.d_k),
        y: rows.map((r) => r[key]), xaxis: `x${axis}`, yaxis: `y${axis}`, line: { color }, marker: { color, size: 6 },
        hovertemplate: `d_k %{x}<br>${t("plot.hover-value", { label, value: "%{y:.4g}" })}<extra>${name}</extra>` });
    }
  });
  const axes = {};
  const shapes = [];
  QUANTITIES.forEach(([, said], i) => {
    const label = t(said);
    const axis = i ? String(i + 1) : "";
    const domain = [i / 3 + 0.02, (i + 1) / 3 - 0.05];
    axes[`xaxis${axis}`] = { type: "log", domain, anchor: `y${axis}`, title: { text: "d_k" }, gridcolor: themed("grid") };
    axes[`yaxis${axis}`] = { anchor: `x${axis}`, title: { text: label, standoff: 4 }, gridcolor: themed("grid"), rangemode: "tozero" };
    shapes.push({ type: "line", xref: `x${axis}`, yref: `y${axis} domain`, x0: dk, x1: dk, y0: 0, y1: 1,
      line: { color: themed("ink"), width: 1, dash: "dot" } });
  });
  const layout = baseLayout({ margin: { l: 48, r: 10, t: 30, b: 44 }, ...axes, shapes,
    legend: { orientation: "h", x: 0, y: 1.12 },
    annotations: [{ text: t("scaling.scaling.model-dk", { dk: String(dk) }), xref: "x", yref: "y domain", x: Math.log10(dk), y: 1, yanchor: "bottom", showarrow: false, font: { size: 11 } }] });
  div.dataset.dk = String(dk);
  drawPlot(div, data, layout, `${answer.model}-scaling-sampled`, answer);
}

function drawHeads(div, answer) {
  const heads = answer.heads;
  const x = heads.map((_, i) => i);
  const labels = heads.map((h) => t("scaling.scaling.head", { kind: t(`kind.${h.kind}`), layer: String(h.layer + 1), head: String(h.head + 1) }));
  const bar = (name, key, color) => ({ type: "bar", name, x, y: heads.map((h) => h[key]), customdata: labels,
    marker: { color }, hovertemplate: `%{customdata}<br>${t("plot.hover-value", { label: name, value: "%{y:.4g}" })}<extra></extra>` });
  const layout = baseLayout({ margin: { l: 56, r: 10, t: 30, b: 90 }, barmode: "group",
    legend: { orientation: "h", x: 0, y: 1.12 },
    xaxis: { tickmode: "array", tickvals: x, ticktext: labels, tickangle: -60, tickfont: { size: 9 } },
    yaxis: { type: "log", title: { text: t("scaling.scaling.std") }, gridcolor: themed("grid") } });
  drawPlot(div, [bar(t("scaling.scaling.without"), "raw_std", RAW), bar(t("scaling.scaling.with"), "scaled_std", SCALED)], layout,
    `${answer.model}-scaling-heads`, answer);
}
