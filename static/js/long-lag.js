// Chapter 3's learning experiment: tiny RNN and LSTM encoders trained to recall a signal across a
// lag (models/long_lag.py). Accuracy against lag as trained, and, live, the gradient curves of the
// tiny models at the lag the reader picks, before and after training.
import * as api from "./api.js";
import { partsOf } from "./dom.js";
import { MODEL_MARKERS, MODEL_PALETTE, baseLayout, draw, plotText, showEmpty } from "./plots.js";
import { Latest } from "./requests.js";

/** The cells the server trained, in its order (GET /api/long-lag `cells`): colour, marker, label. */
export function cellStyle(results, cell) {
  const i = Math.max(0, (results.cells || []).indexOf(cell));
  return { colour: MODEL_PALETTE[i % MODEL_PALETTE.length], marker: MODEL_MARKERS[i % MODEL_MARKERS.length],
    label: plotText(cell.toUpperCase()) };
}
const WEIGHTS_DASH = { trained: "solid", initialized: "dot" };

export class LongLagView {
  /** `root`: chapter 3's section; `page`: the URL state (filler, lag), changed through
   * `onChange(changes)`; `results`: GET /api/long-lag. */
  constructor(root, { page, onChange, results }) {
    this.$ = partsOf(root);
    this.anchor = this.$("lag-accuracy"); // its nearness draws the chapter's long-lag figures
    this.results = results;
    this.state = { filler: page.filler, lag: page.lag };
    this.onChange = onChange;
    this.latest = new Latest();
    const filler = this.$("lag-filler");
    filler.value = this.fillers.includes(this.state.filler) ? this.state.filler : this.fillers[0];
    this.state.filler = filler.value;
    filler.addEventListener("change", () => this.pick(filler.value, this.state.lag));
    this.$("lag-pick").addEventListener("change", (e) => this.pick(this.state.filler, Number(e.target.value)));
    this.fillLags();
  }

  get fillers() {
    return [...new Set(this.results.runs.map((r) => r.filler))];
  }

  lags(filler = this.state.filler) {
    return [...new Set(this.results.runs.filter((r) => r.filler === filler).map((r) => r.lag))].sort((a, b) => a - b);
  }

  fillLags() {
    const lags = this.lags();
    if (!lags.includes(this.state.lag)) this.state.lag = lags[Math.floor(lags.length / 2)];
    this.$("lag-pick").replaceChildren(...lags.map((lag) => new Option(String(lag), String(lag))));
    this.$("lag-pick").value = String(this.state.lag);
  }

  pick(filler, lag) {
    this.state = { filler, lag };
    this.fillLags();
    this.onChange(this.state);
    this.draw();
  }

  async draw() {
    drawAccuracy(this.$("lag-accuracy"), this.results, this.state);
    const { lag, filler } = this.state;
    try {
      await this.latest.ask((signal) => api.lagGradients(lag, filler, signal),
        (answer) => drawLagGradients(this.$("lag-gradients"), answer, this.results));
    } catch (error) {
      showEmpty(this.$("lag-gradients"), `The tiny models' gradients could not be measured (${api.explain(error)}).`);
    }
  }
}

/** Held-out accuracy against lag, one line per cell, chance as a band, the picked lag marked. */
export function drawAccuracy(div, results, state) {
  const runs = results.runs.filter((r) => r.filler === state.filler);
  const cells = (results.cells || []).filter((cell) => runs.some((r) => r.cell === cell));
  const data = cells.map((cell) => {
    const mine = runs.filter((r) => r.cell === cell).sort((a, b) => a.lag - b.lag);
    const style = cellStyle(results, cell);
    return {
      type: "scatter", mode: "lines+markers", name: style.label,
      x: mine.map((r) => r.lag), y: mine.map((r) => r.accuracy),
      customdata: mine.map((r) => [r.steps, r.seconds]),
      line: { color: style.colour, width: 2.5 }, marker: { size: 7, symbol: style.marker },
      hovertemplate: `<b>${style.label}</b>, lag %{x}<br>accuracy %{y:.3f}<br>%{customdata[0]} steps, %{customdata[1]} s<extra></extra>`,
    };
  });
  if (!data.length) {
    showEmpty(div, "No long-lag results for this filler.");
    return;
  }
  const layout = baseLayout({
    margin: { l: 56, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "lag (filler tokens between the signal and the question)" }, gridcolor: "#eceef3", zeroline: false },
    yaxis: { title: { text: "held-out accuracy" }, range: [0, 1.05], gridcolor: "#eceef3", zeroline: false },
    legend: { x: 0, xanchor: "left", y: 0.02, yanchor: "bottom", bgcolor: "rgba(255,255,255,0.85)" },
    shapes: [
      { type: "line", xref: "paper", x0: 0, x1: 1, y0: results.chance, y1: results.chance, line: { color: "#8a93a6", dash: "dash", width: 1.5 } },
      { type: "line", xref: "x", yref: "paper", x0: state.lag, x1: state.lag, y0: 0, y1: 1, line: { color: "#2b44c9", width: 1 } },
    ],
    annotations: [{ xref: "paper", x: 1, xanchor: "right", y: results.chance, yanchor: "bottom", text: "chance", showarrow: false, font: { size: 11, color: "#667085" } }],
  });
  div.dataset.filler = state.filler;
  draw(div, data, layout, `long-lag-accuracy-${state.filler}`, results);
}

/** The tiny models' gradient curves at one lag: trained solid, at initialization dotted. */
export function drawLagGradients(div, answer, results) {
  const data = answer.curves.map((c) => ({
    type: "scatter", mode: "lines",
    name: `${cellStyle(results, c.model).label}, ${c.weights === "trained" ? "trained" : "before training"}`,
    x: c.distance, y: c.norm.map((v) => (v > 0 ? v : null)),
    line: { color: cellStyle(results, c.model).colour, width: 2.2, dash: WEIGHTS_DASH[c.weights] },
    hovertemplate: `<b>${cellStyle(results, c.model).label}, ${c.weights}</b><br>%{x} steps before the end<br>norm %{y:.3g}<extra></extra>`,
  }));
  const signal = answer.tokens.length - 1; // the signal is the first token: its distance from the end
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "tokens before the end (the signal is the last)" }, gridcolor: "#eceef3", zeroline: false },
    yaxis: { title: { text: "gradient norm" }, type: "log", exponentformat: "power", gridcolor: "#eceef3" },
    legend: { x: 0, xanchor: "left", y: 0, yanchor: "bottom", bgcolor: "rgba(255,255,255,0.85)" },
    shapes: [{ type: "line", xref: "x", yref: "paper", x0: signal, x1: signal, y0: 0, y1: 1, line: { color: "#2b44c9", width: 1 } }],
  });
  div.dataset.lag = String(answer.lag);
  draw(div, data, layout, `long-lag-gradients-${answer.filler}-${answer.lag}`, answer);
}
