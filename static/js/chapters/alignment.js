// The attention chapter, deriving attention: the alignment grid of each recurrent model with attention, output
// words (rows) by source words (columns), one panel per model, from the one compare stream (keyed
// by model). A click on a row picks that output word for the scores below (store `row`).
import { el } from "../dom.js";
import { fmt, mapTable, sharpness, strongest } from "../facts.js";
import { label, t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { alignmentLayout, attentionTrace, draw as drawPlot, onPlot, showEmpty } from "../plots.js";
import { modelFailure } from "../requests.js";
import * as store from "../store.js";

export const chapter = "attention";
export const title = "alignment";
export const figures = ["alignment-plots"];
export const asks = "typed";

let lab = null;
const plots = new Map(); // model -> its plot

/** One panel per model of `catalog.aligning`. */
export function mount(context) {
  lab = context;
  const container = lab.part("alignment-plots");
  for (const m of lab.catalog.aligning) plots.set(m.name, plotPanel(m));
  container.replaceChildren(...[...plots.values()].map((div) => div.parentElement));
  if (!plots.size) {
    container.append(label(el("p", "panel panel--note"), "attention.alignment.none"));
  }
}

export const keys = () => [...plots.keys()];
export const panels = (name) => [plots.get(name)];
export const ask = (text, signal, name) => lab.compared(name, signal);
export const failure = modelFailure;

export function draw(answer, name) {
  const div = plots.get(name);
  whenNear(div, () => drawAlignment(div, name, answer));
}

const crossOf = (answer) => answer && answer.maps.find((m) => m.kind === "cross");

export function describe(answer, name) {
  const map = crossOf(answer);
  if (!map || !map.rows.length) return t("attention.alignment.no-attention", { name });
  return t("attention.alignment.describe", { name, count: map.rows.length, cols: String(map.cols.length), share: fmt(sharpness(map.weights)), looks: strongest(map) });
}

export function rows(answer, name) {
  const map = crossOf(answer);
  return mapTable(map || { rows: [], cols: [], weights: [] }, t("attention.alignment.map-name", { name }));
}

/** A figure captioned with the model's summary and name; returns its plot. */
function plotPanel(model) {
  const caption = el("figcaption", "panel__caption");
  caption.append(lab.catalog.summarize(el("span", "panel__title"), model), " ", el("code", "", model.name));
  const div = el("div", "plot plot--align");
  div.dataset.testid = `attention-${model.name}`;
  div.setAttribute("role", "group");
  label(div, "attention.alignment.map-name", { name: model.name }, "aria-label");
  el("figure", "panel").append(caption, div);
  return div;
}

function drawAlignment(div, model, response) {
  const map = crossOf(response);
  if (!map || !map.rows.length || !map.cols.length) {
    showEmpty(div, t("attention.alignment.no-attention", { name: model }));
    return;
  }
  drawPlot(div, [attentionTrace(map)], alignmentLayout(map), `attention-${model}`, response);
  onPlot(div, "plotly_click", (event) => {
    const point = event.points && event.points[0];
    if (point) store.set("row", point.y); // a row is an output word: the attention chapter looks at it closely
  });
}
