// Chapter 5, deriving attention: the alignment grid of each recurrent model with attention,
// output words (rows) by source words (columns), one panel per model.
import { el, partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { attentionTrace, baseLayout, draw, onPlot, showEmpty, tokenAxis } from "./plots.js";

export class AlignmentView {
  /** `root`: chapter 5's section, whose #alignment-plots gets one panel per model of
   * `catalog.aligning`; `onChange({ row })` when a row is clicked. */
  constructor(root, { catalog, onChange }) {
    const container = partsOf(root)("alignment-plots");
    this.onRow = (row) => onChange({ row });
    this.plots = new Map(catalog.aligning.map((m) => [m.name, plotPanel(m)]));
    container.replaceChildren(...[...this.plots.values()].map((div) => div.parentElement));
    if (!this.plots.size) {
      container.append(el("p", "panel panel--note", "No recurrent model with attention is loaded, so there is no alignment to show."));
    }
  }

  /** A model's answer for the latest text (models without a panel are not this view's). */
  showAnswer(name, answer) {
    const div = this.plots.get(name);
    if (div) whenNear(div, () => drawAlignment(div, name, answer, this.onRow));
  }

  /** Model `name` gave no answer for the latest text: say why in its figure. */
  showProblem(name, message) {
    const div = this.plots.get(name);
    if (div) whenNear(div, () => showEmpty(div, message));
  }
}

/** A figure captioned with the model's summary and name; returns its plot. */
function plotPanel(model) {
  const caption = el("figcaption", "panel__caption");
  caption.append(el("span", "panel__title", model.summary), " ", el("code", "", model.name));
  const div = el("div", "plot plot--align");
  div.dataset.testid = `attention-${model.name}`;
  div.setAttribute("role", "group");
  div.setAttribute("aria-label", `Attention weights of ${model.name}: output words by source words`);
  el("figure", "panel").append(caption, div);
  return div;
}

function drawAlignment(div, model, response, onRow) {
  const map = response && response.maps.find((m) => m.kind === "cross");
  if (!map || !map.rows.length || !map.cols.length) {
    showEmpty(div, `${model} produced no attention for this sentence.`);
    return;
  }
  const trace = attentionTrace(map);
  const layout = alignmentLayout(map);
  draw(div, [trace], layout, `attention-${model}`, response);
  onPlot(div, "plotly_click", (event) => {
    const point = event.points && event.points[0];
    if (point) onRow(point.y); // a row is an output word: chapter 5 looks at it closely
  });
}

/** The axes of one alignment grid: output words (rows, top down) by source words (columns). */
export function alignmentLayout(map) {
  return baseLayout({
    margin: { l: 60, r: 12, t: 8, b: 60 },
    xaxis: tokenAxis(map.cols, { title: { text: "source (French)", standoff: 6 }, tickangle: map.cols.length > 8 ? -45 : 0 }),
    yaxis: tokenAxis(map.rows, { title: { text: "output (English)", standoff: 6 }, autorange: "reversed" }),
  });
}
