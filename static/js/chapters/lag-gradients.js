// The gradients chapter's learning experiment, live: the tiny long-lag models' gradient curves at the lag the
// reader picks (POST /api/long-lag/gradients), before and after training. The results and the
// choice come from the long-lag view (store `lag`); each new choice is measured once near.
import * as api from "../api.js";
import { fmt } from "../facts.js";
import { baseLayout, draw as drawPlot, plotText, seriesStyle, themed } from "../plots.js";
import { t } from "../i18n.js";
import * as store from "../store.js";

export const chapter = "gradients";
export const fetchLagGradients = (lag, filler, signal) =>
  api.post("/api/long-lag/gradients", { lag, filler }, signal);
export const title = "tiny models' gradients";
export const figures = ["lag-gradients"];
export const asks = "self";

const WEIGHTS_DASH = { trained: "solid", initialized: "dot" };
let lab = null;
let choice = null; // {results, filler, lag}

export function mount(context) {
  lab = context;
  store.watch("lag", (value) => {
    choice = value;
    lab.ask({ lazy: true });
  });
}

export const keys = () => [null];
export const panels = () => [lab.part("lag-gradients")];
export const ask = (text, signal) => fetchLagGradients(choice.lag, choice.filler, signal);
export const failure = (error) => t("gradients.lag-gradients.failure", { why: api.explain(error) });
export const draw = (answer) => drawLagGradients(lab.part("lag-gradients"), answer, choice.results);

const label = (c) => t(c.weights === "trained" ? "gradients.lag-gradients.trained" : "gradients.lag-gradients.untrained", { model: c.model.toUpperCase() });

export function describe(answer) {
  const signal = answer.tokens.length - 1; // the signal is the first token: its distance from the end
  const reach = answer.curves.map((c) => {
    const share = c.norm[0] > 0 && signal < c.norm.length ? c.norm[signal] / c.norm[0] : null;
    return t("gradients.lag-gradients.reach", { curve: label(c), share: fmt(share) });
  });
  return t("gradients.lag-gradients.describe", { lag: String(answer.lag), filler: t(`gradients.filler.${answer.filler}`), count: signal, reach: reach.join(t("list.separator")) });
}

export function rows(answer) {
  const longest = Math.max(0, ...answer.curves.map((c) => c.distance.length));
  return {
    caption: t("gradients.lag-gradients.caption", { lag: String(answer.lag), filler: t(`gradients.filler.${answer.filler}`) }),
    headers: [t("gradients.gradients.before-end"), ...answer.curves.map(label)],
    rows: Array.from({ length: longest }, (_, i) => [String(i), ...answer.curves.map((c) => fmt(c.norm[i]))]),
  };
}

/** The tiny models' gradient curves at one lag: trained solid, at initialization dotted. */
function drawLagGradients(div, answer, results) {
  const cells = results.cells || [];
  const data = answer.curves.map((c) => {
    const name = plotText(c.model.toUpperCase());
    return {
      type: "scatter", mode: "lines",
      name: plotText(label(c)),
      x: c.distance, y: c.norm.map((v) => (v > 0 ? v : null)),
      line: { color: seriesStyle(cells, c.model).colour, width: 2.2, dash: WEIGHTS_DASH[c.weights] },
      hovertemplate: t("gradients.gradients.hover", { name: plotText(label(c)) }),
    };
  });
  const signal = answer.tokens.length - 1; // the signal is the first token: its distance from the end
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: t("gradients.lag-gradients.x-axis") }, gridcolor: themed("grid"), zeroline: false },
    yaxis: { title: { text: t("gradients.gradients.y-axis") }, type: "log", exponentformat: "power", gridcolor: themed("grid") },
    legend: { x: 0, xanchor: "left", y: 0, yanchor: "bottom", bgcolor: "rgba(255,255,255,0.85)" },
    shapes: [{ type: "line", xref: "x", yref: "paper", x0: signal, x1: signal, y0: 0, y1: 1, line: { color: themed("mark"), width: 1 } }],
  });
  div.dataset.lag = String(answer.lag);
  drawPlot(div, data, layout, `long-lag-gradients-${answer.filler}-${answer.lag}`, answer);
}
