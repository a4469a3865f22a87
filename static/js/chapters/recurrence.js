// The recurrence chapter, recurrence: the plain RNN's encoder reading the typed sentence (POST /api/recurrence),
// its state after each piece as a piece x unit heatmap, a step slider that follows the reading
// with the recurrence written out for that step, and how much each piece moves the state.
import * as api from "../api.js";
import { fillStory, fmt, unitsRule } from "../facts.js";
import { t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, GATE_SCALE, OKABE_ITO, plotText, showEmpty, showToken, themed, tokenAxis } from "../plots.js";
import { couldNot } from "../requests.js";
import * as store from "../store.js";
import { count } from "../url-state.js";

export const chapter = "recurrence";
/** The recurrence chapter: the plain RNN's encoder states on `text`. */
export const fetchRecurrence = (text, signal) => api.post("/api/recurrence", { text }, signal);
export const title = "recurrence";
export const figures = ["recurrence-plot", "recurrence-change", "recurrence-step", "recurrence-step-value",
  "recurrence-equation", "recurrence-rule", "recurrence-story"];
export const asks = "text";

/** The URL's `step`: the piece shown, from 0. */
export const state = { step: { read: (q) => ({ step: count(q.get("step")) }), write: (p) => String(p.step) } };

const READING = OKABE_ITO.vermillion; // Okabe-Ito vermillion: the piece being read
const READ = "#56B4E9";
let lab = null;
let answer = null; // the answer drawn

/** The step slider, from and to the URL state (step). */
export function mount(context) {
  lab = context;
  const slider = lab.part("recurrence-step");
  slider.addEventListener("input", () => {
    lab.page.set({ step: Number(slider.value) });
    if (!answer) return;
    showStep();
    redraw();
  });
}

export const keys = () => [null];
export const panels = () => [lab.part("recurrence-plot"), lab.part("recurrence-change")];
export const ask = (text, signal) => fetchRecurrence(text, signal);
export const failure = (error) => couldNot(t("recurrence.recurrence.what"), error, t("recurrence.recurrence.missing"));

export function draw(next) {
  answer = next;
  const slider = lab.part("recurrence-step");
  slider.max = String(Math.max(answer.tokens.length - 1, 0));
  slider.value = String(Math.min(lab.page.step, answer.tokens.length - 1));
  lab.part("recurrence-rule").textContent = t("recurrence.recurrence.rule", { rule: unitsRule(answer, "recurrence.recurrence.units-rule"), hidden: String(answer.hidden_size) });
  showStep();
  redraw();
  tell();
}

const step = () => Number(lab.part("recurrence-step").value);

function redraw() {
  if (!answer) return;
  const [states, change] = panels();
  whenNear(states, () => drawStates(states, answer, step()));
  whenNear(change, () => drawChange(change, answer, step()));
}

/** The slider's label and the recurrence written out for the step, with its numbers. */
function showStep() {
  const { tokens, change, norm, equation } = answer;
  const at = step();
  const token = showToken(tokens[at]);
  const label = t("recurrence.recurrence.piece", { n: String(at + 1), count: tokens.length, token });
  lab.part("recurrence-step-value").textContent = label;
  lab.part("recurrence-step").setAttribute("aria-valuetext", label);
  const rule = equation.split(",")[0].replace(/\(t-1\)/g, at === 0 ? "(-1)" : String(at - 1)).replace(/_t\b/g, `_${at}`);
  const before = at === 0 ? "h_(-1)" : `h_${at - 1}`;
  lab.part("recurrence-equation").textContent = t("recurrence.recurrence.equation", { token, rule }) +
    `   ‖h_${at} − ${before}‖ = ${fmt(change[at])}   ‖h_${at}‖ = ${fmt(norm[at])}`;
}

/** The prose's facts: where the state moves most and least, and its final length. */
function facts({ tokens, change, norm, hidden_size: hidden, model }) {
  const most = change.indexOf(Math.max(...change));
  const least = change.indexOf(Math.min(...change));
  const quote = (i) => t("quote", { text: showToken(tokens[i]) });
  return {
    pieces: String(tokens.length), model, "biggest-token": quote(most), "biggest-change": fmt(change[most]),
    "smallest-token": quote(least), "smallest-change": fmt(change[least]), "final-norm": fmt(norm[norm.length - 1]),
    "max-norm": fmt(Math.sqrt(hidden)), hidden: String(hidden),
  };
}

function tell() {
  const said = facts(answer);
  fillStory(lab.part("recurrence-story"), said);
  store.headline(chapter, t("recurrence.recurrence.headline", { model: said.model, token: said["biggest-token"], change: said["biggest-change"] }));
}

/** The state heatmap: its extremes; the change plot: where the state moves most and least. */
export function describe(shown, key, plot) {
  if (plot?.id === "recurrence-plot") return describeStates(shown);
  const said = facts(shown);
  return t("recurrence.recurrence.describe", {
    model: said.model, count: shown.tokens.length, most: said["biggest-token"], biggest: said["biggest-change"],
    least: said["smallest-token"], smallest: said["smallest-change"], norm: said["final-norm"], max: said["max-norm"],
  });
}

function describeStates({ tokens, states, units, model }) {
  const cells = states.flatMap((row, i) => row.map((v, u) => [v, i, u]));
  if (!cells.length) return t("recurrence.recurrence.nothing");
  const [high, low] = [cells.reduce((a, c) => (c[0] > a[0] ? c : a)), cells.reduce((a, c) => (c[0] < a[0] ? c : a))];
  const at = ([v, i, u]) => t("recurrence.recurrence.at", { value: fmt(v), unit: String(units[u]), token: showToken(tokens[i]) });
  return t("recurrence.recurrence.states-describe", { model, count: tokens.length, units: String(units.length), high: at(high), low: at(low) });
}

export function rows(shown, key, plot) {
  const { tokens, change, norm, states, units } = shown;
  if (plot?.id === "recurrence-change") {
    return {
      caption: t("recurrence.recurrence.change-caption", { model: shown.model }),
      headers: [t("header.piece"), t("header.token"), "‖h_t − h_(t−1)‖", "‖h_t‖"],
      rows: tokens.map((tok, i) => [String(i + 1), showToken(tok), fmt(change[i]), fmt(norm[i])]),
    };
  }
  if (plot?.id === "recurrence-plot") {
    return {
      caption: t("recurrence.recurrence.states-caption", { model: shown.model, count: units.length }),
      headers: [t("header.piece"), t("header.token"), ...units.map((u) => t("recurrence.recurrence.unit-n", { unit: String(u) }))],
      rows: tokens.map((tok, i) => [String(i + 1), showToken(tok), ...states[i].map(fmt)]),
    };
  }
  return {
    caption: t("recurrence.recurrence.caption", { model: shown.model, count: units.length }),
    headers: [t("header.piece"), t("header.token"), "‖h_t − h_(t−1)‖", "‖h_t‖", ...units.map((u) => t("recurrence.recurrence.unit-n", { unit: String(u) }))],
    rows: tokens.map((tok, i) => [String(i + 1), showToken(tok), fmt(change[i]), fmt(norm[i]), ...states[i].map(fmt)]),
  };
}

function drawStates(div, shown, at) {
  const { tokens, states, units } = shown;
  if (!tokens.length) {
    showEmpty(div, t("recurrence.recurrence.nothing"));
    return;
  }
  const labels = tokens.map((tok) => plotText(showToken(tok)));
  const trace = {
    type: "heatmap", z: states, x: units.map((_, i) => i), y: tokens.map((_, i) => i),
    customdata: labels.map((tok) => units.map((u) => [tok, u])),
    hovertemplate: t("recurrence.recurrence.hover"),
    colorscale: GATE_SCALE, zmin: -1, zmax: 1, showscale: false, xgap: 1, ygap: 1, meta: { colorbarTitle: "h" },
  };
  const shown16 = units.map((_, i) => i).filter((i) => i % Math.ceil(units.length / 16) === 0);
  const layout = baseLayout({
    margin: { l: 70, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: t("recurrence.recurrence.unit") }, tickmode: "array", tickvals: shown16, ticktext: shown16.map((i) => String(units[i])), showgrid: false, zeroline: false },
    yaxis: tokenAxis(tokens, { autorange: "reversed" }),
    shapes: [{ type: "rect", xref: "paper", x0: 0, x1: 1, y0: at - 0.5, y1: at + 0.5, line: { color: READING, width: 3 } }],
  });
  div.dataset.step = String(at);
  drawPlot(div, [trace], layout, `${shown.model}-states`, shown);
}

function drawChange(div, shown, at) {
  const { tokens, change, norm } = shown;
  const x = tokens.map((_, i) => i);
  const labels = tokens.map((tok) => plotText(showToken(tok)));
  const data = [
    {
      type: "bar", name: "‖h_t − h_(t−1)‖", x, y: change, customdata: labels,
      marker: { color: x.map((i) => (i === at ? READING : READ)) },
      hovertemplate: "<b>%{customdata}</b><br>‖h_t − h_(t−1)‖ = %{y:.3f}<extra></extra>",
    },
    {
      type: "scatter", mode: "lines+markers", name: "‖h_t‖", x, y: norm, customdata: labels,
      line: { color: themed("ink"), width: 1.5, dash: "dot" }, marker: { size: 6, symbol: "diamond", color: themed("ink") },
      hovertemplate: "<b>%{customdata}</b><br>‖h_t‖ = %{y:.3f}<extra></extra>",
    },
  ];
  const layout = baseLayout({
    margin: { l: 48, r: 12, t: 10, b: 60 },
    xaxis: tokenAxis(tokens, { tickangle: tokens.length > 8 ? -45 : 0 }),
    yaxis: { title: { text: t("recurrence.recurrence.length") }, rangemode: "tozero", gridcolor: themed("grid"), zeroline: false },
    legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
  });
  div.dataset.step = String(at);
  drawPlot(div, data, layout, `${shown.model}-state-change`, shown);
}
