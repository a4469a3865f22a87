// The gradients chapter's learning experiment: tiny RNN and LSTM encoders trained to recall a signal across a
// lag (models/long_lag.py). Its results ship with the checkpoints (GET /api/long-lag, read once):
// held-out accuracy against lag, and the note's facts. The reader's choice of filler and lag is
// shared (store `lag`) with the figure of the tiny models' gradients at that lag (lag-gradients.js).
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { listOf, t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, plotText, seriesStyle, showEmpty, themed } from "../plots.js";
import * as store from "../store.js";

export const chapter = "gradients";
export const fetchLongLag = (signal) => api.get("/api/long-lag", signal);
export const title = "long-lag experiment";
export const figures = ["lag-accuracy", "lag-filler", "lag-pick", "lag-note"];
export const asks = "start";

/** The URL's `filler` and `lag`: checked against the long-lag results once they arrive. */
export const state = {
  filler: { read: (q) => ({ filler: q.get("filler") || "blank" }), write: (p) => p.filler },
  lag: { read: (q) => ({ lag: Number(q.get("lag")) || null }), write: (p) => String(p.lag || "") },
};

let lab = null;
let results = null; // the answer drawn
let chosen = null; // {filler, lag}: the reader's choice

export function mount(context) {
  lab = context;
  lab.part("lag-filler").addEventListener("change", (e) => pick(e.target.value, chosen.lag));
  lab.part("lag-pick").addEventListener("change", (e) => pick(chosen.filler, Number(e.target.value)));
}

export const keys = () => [null];
/** Without the results there are no tiny models to measure either: the failure is said on both figures. */
export const panels = () => [lab.part("lag-accuracy"), lab.part("lag-gradients")];
export const ask = (text, signal) => fetchLongLag(signal);

export function failure(error) {
  const why = error instanceof api.ApiError && error.status === 404 ? t("gradients.lag.no-results") : api.explain(error);
  return t("gradients.lag.failure", { why });
}

/** The results: the controls (the URL's filler and lag, if the results have them), the note, the chart when near. */
export function draw(answer) {
  results = answer;
  const fillers = [...new Set(results.runs.map((r) => r.filler))];
  const filler = lab.part("lag-filler");
  filler.value = fillers.includes(lab.page.filler) ? lab.page.filler : fillers[0];
  chosen = { filler: filler.value, lag: lab.page.lag };
  fillLags();
  lab.page.set(chosen);
  fillStory(lab.part("lag-note"), lagFacts(results));
  publish();
}

function lags(filler = chosen.filler) {
  return [...new Set(results.runs.filter((r) => r.filler === filler).map((r) => r.lag))].sort((a, b) => a - b);
}

function fillLags() {
  const tried = lags();
  if (!tried.includes(chosen.lag)) chosen.lag = tried[Math.floor(tried.length / 2)];
  lab.part("lag-pick").replaceChildren(...tried.map((lag) => new Option(String(lag), String(lag))));
  lab.part("lag-pick").value = String(chosen.lag);
}

function pick(filler, lag) {
  chosen = { filler, lag };
  fillLags();
  lab.page.set(chosen);
  publish();
}

/** The chart when near, and the choice for the tiny models' gradients. */
function publish() {
  const div = lab.part("lag-accuracy");
  whenNear(div, () => drawAccuracy(div, results, chosen));
  store.set("lag", { results, ...chosen });
}

/** "a lag of 20", or "no lag tried (up to 100)" when a cell stayed above chance everywhere; and which holds out longer. */
function lagFacts(answer) {
  const facts = {};
  for (const [filler, cells] of Object.entries(answer.chance_lag || {})) {
    const tried = answer.runs.filter((r) => r.filler === filler).map((r) => r.lag);
    const beyond = Math.max(...tried) + 1; // "never at chance" ranks past every lag tried
    for (const [cell, lag] of Object.entries(cells)) {
      facts[`lag-${filler}-${cell}`] = lag === null ? t("gradients.lag.never", { max: String(Math.max(...tried)) }) : t("gradients.lag.at", { lag: String(lag) });
    }
    facts[`lag-${filler}-holds`] = holdsOut(Object.entries(cells).map(([cell, lag]) => [cell, lag ?? beyond]));
  }
  facts["lag-steps"] = String(answer.max_steps);
  return facts;
}

/** "the RNN holds out longer" (the cell whose chance lag is largest), or "both hold out as long". */
function holdsOut(cellLags) {
  const longest = Math.max(...cellLags.map(([, lag]) => lag));
  const best = cellLags.filter(([, lag]) => lag === longest);
  if (best.length === cellLags.length) return t("gradients.lag.both");
  const cells = listOf(best.map(([c]) => c.toUpperCase()));
  return t(best.length === 1 ? "gradients.lag.longer" : "gradients.lag.longer-several", { cells });
}

/** Its figure is the accuracy plot; the gradients plot, where it says its failure too, is lag-gradients.js's (null). */
export function describe(answer, key, plot) {
  if (plot && plot.id !== "lag-accuracy") return null;
  const filler = chosen ? chosen.filler : answer.runs[0]?.filler;
  const facts = lagFacts(answer);
  const cells = (answer.cells || []).map((cell) => t("gradients.lag.cell-at", { cell: cell.toUpperCase(), lag: facts[`lag-${filler}-${cell}`] || "–" }));
  return t("gradients.lag.describe", { filler: t(`gradients.filler.${filler}`), chance: fmt(answer.chance), cells: listOf(cells), holds: facts[`lag-${filler}-holds`] || "–" });
}

export function rows(answer, key, plot) {
  if (plot && plot.id !== "lag-accuracy") return null;
  const filler = chosen ? chosen.filler : answer.runs[0]?.filler;
  const runs = answer.runs.filter((r) => r.filler === filler).sort((a, b) => a.lag - b.lag);
  return {
    caption: t("gradients.lag.caption", { filler: t(`gradients.filler.${filler}`), chance: fmt(answer.chance) }),
    headers: [t("gradients.lag.cell"), t("gradients.lag.lag"), t("gradients.lag.accuracy"), t("gradients.lag.steps"), t("gradients.lag.seconds")],
    rows: runs.map((r) => [r.cell.toUpperCase(), String(r.lag), fmt(r.accuracy), String(r.steps), fmt(r.seconds)]),
  };
}

/** Held-out accuracy against lag, one line per cell, chance as a band, the picked lag marked. */
function drawAccuracy(div, answer, choice) {
  const runs = answer.runs.filter((r) => r.filler === choice.filler);
  const cells = (answer.cells || []).filter((cell) => runs.some((r) => r.cell === cell));
  const data = cells.map((cell) => {
    const mine = runs.filter((r) => r.cell === cell).sort((a, b) => a.lag - b.lag);
    const style = seriesStyle(answer.cells || [], cell);
    const label = plotText(cell.toUpperCase());
    return {
      type: "scatter", mode: "lines+markers", name: label,
      x: mine.map((r) => r.lag), y: mine.map((r) => r.accuracy),
      customdata: mine.map((r) => [r.steps, r.seconds]),
      line: { color: style.colour, width: 2.5 }, marker: { size: 7, symbol: style.marker },
      hovertemplate: t("gradients.lag.hover", { label }),
    };
  });
  if (!data.length) {
    showEmpty(div, t("gradients.lag.none"));
    return;
  }
  const layout = baseLayout({
    margin: { l: 56, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: t("gradients.lag.x-axis") }, gridcolor: themed("grid"), zeroline: false },
    yaxis: { title: { text: t("gradients.lag.accuracy") }, range: [0, 1.05], gridcolor: themed("grid"), zeroline: false },
    legend: { x: 0, xanchor: "left", y: 0.02, yanchor: "bottom", bgcolor: "rgba(255,255,255,0.85)" },
    shapes: [
      { type: "line", xref: "paper", x0: 0, x1: 1, y0: answer.chance, y1: answer.chance, line: { color: themed("guide"), dash: "dash", width: 1.5 } },
      { type: "line", xref: "x", yref: "paper", x0: choice.lag, x1: choice.lag, y0: 0, y1: 1, line: { color: themed("mark"), width: 1 } },
    ],
    annotations: [{ xref: "paper", x: 1, xanchor: "right", y: answer.chance, yanchor: "bottom", text: t("gradients.lag.chance"), showarrow: false, font: { size: 11, color: themed("muted") } }],
  });
  div.dataset.filler = choice.filler;
  drawPlot(div, data, layout, `long-lag-accuracy-${choice.filler}`, answer);
}
