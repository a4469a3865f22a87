// Chapter 3, one step at a time: how much the gradient shrinks crossing each token backwards
// (measured; the running product of these is the curve), what bounds that shrink (the top
// singular value of the step Jacobian), and the LSTM's forget gate, the factor on its cell path.
// A helper of chapters/gradients.js.
import { baseLayout, draw, plotText, showEmpty } from "./plots.js";

export const FACTORS = {
  shrink: { title: "measured shrink per step", axis: "gradient after / before the step" },
  step_factor: { title: "top singular value of the step Jacobian", axis: "σ_max(ds_t / ds_(t-1))" },
  hidden_factor: { title: "the same on the hidden path only", axis: "σ_max(dh_t / dh_(t-1))" },
  forget_mean: { title: "LSTM forget gate, mean over units", axis: "mean forget gate" },
};
const DASH = { trained: "solid", initialized: "dot" };

/** One line per (model, weights) of `factor`, against distance from the end; a reference at 1. */
export function drawStepFactors(div, answer, factor, catalog) {
  const curves = ((answer && answer.curves) || []).filter((c) => Array.isArray(c[factor]));
  if (!curves.length) {
    showEmpty(div, factor === "forget_mean" ? "No gated (LSTM) model was measured." : "No per-step factors were measured.");
    return;
  }
  const data = curves.map((c) => {
    const name = `${plotText(c.model)}, ${(c.weights || "trained") === "trained" ? "as shipped" : "at initialization"}`;
    return {
      type: "scatter", mode: c[factor].length > 40 ? "lines" : "lines+markers", name,
      x: c[factor].map((_, i) => i), y: c[factor],
      line: { color: catalog.colour(c.model), width: 2, dash: DASH[c.weights || "trained"] },
      marker: { size: 5, symbol: catalog.marker(c.model) },
      hovertemplate: `<b>${name}</b><br>%{x} steps before the end<br>%{y:.3f}<extra></extra>`,
    };
  });
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "tokens before the end of the input" }, zeroline: false, gridcolor: "#eceef3" },
    yaxis: { title: { text: FACTORS[factor].axis }, gridcolor: "#eceef3", zeroline: false, rangemode: "tozero" },
    legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
    shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { color: "#8a93a6", dash: "dash", width: 1.5 } }],
  });
  div.dataset.factor = factor;
  draw(div, data, layout, `step-factors-${factor}`, answer);
}
