// The gradients chapter, one step at a time: how much the gradient shrinks crossing each token backwards
// (measured; the running product of these is the curve), what bounds that shrink (the top
// singular value of the step Jacobian), and the LSTM's forget gate, the factor on its cell path.
// A helper of chapters/gradients.js.
import { t } from "./i18n.js";
import { baseLayout, draw, plotText, showEmpty, themed } from "./plots.js";

/** Each view of the per-step factors: its name and its y axis, in the page's language. */
export const FACTORS = {
  shrink: { title: () => t("gradients.factors.title.shrink"), axis: () => t("gradients.factors.shrink-axis") },
  step_factor: { title: () => t("gradients.factors.title.step"), axis: () => "σ_max(ds_t / ds_(t-1))" },
  hidden_factor: { title: () => t("gradients.factors.title.hidden"), axis: () => "σ_max(dh_t / dh_(t-1))" },
  forget_mean: { title: () => t("gradients.factors.title.forget"), axis: () => t("gradients.factors.forget-axis") },
};
const DASH = { trained: "solid", initialized: "dot" };

/** One line per (model, weights) of `factor`, against distance from the end; a reference at 1. */
export function drawStepFactors(div, answer, factor, catalog) {
  const curves = ((answer && answer.curves) || []).filter((c) => Array.isArray(c[factor]));
  if (!curves.length) {
    showEmpty(div, t(factor === "forget_mean" ? "gradients.factors.no-gated" : "gradients.factors.none"));
    return;
  }
  const data = curves.map((c) => {
    const name = plotText(t((c.weights || "trained") === "trained" ? "gradients.gradients.shipped" : "gradients.gradients.initial", { model: c.model }));
    return {
      type: "scatter", mode: c[factor].length > 40 ? "lines" : "lines+markers", name,
      x: c[factor].map((_, i) => i), y: c[factor],
      line: { color: catalog.colour(c.model), width: 2, dash: DASH[c.weights || "trained"] },
      marker: { size: 5, symbol: catalog.marker(c.model) },
      hovertemplate: t("gradients.factors.hover", { name }),
    };
  });
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: t("gradients.gradients.x-axis") }, zeroline: false, gridcolor: themed("grid") },
    yaxis: { title: { text: FACTORS[factor].axis() }, gridcolor: themed("grid"), zeroline: false, rangemode: "tozero" },
    legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
    shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { color: themed("guide"), dash: "dash", width: 1.5 } }],
  });
  div.dataset.factor = factor;
  draw(div, data, layout, `step-factors-${factor}`, answer);
}
