// Chapter 2, recurrence: the plain RNN's encoder reading the typed sentence (POST /api/recurrence),
// its state after each piece as a piece x unit heatmap, a step slider that follows the reading
// with the recurrence written out for that step, and how much each piece moves the state.
import * as api from "./api.js";
import { partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { GATE_SCALE, baseLayout, draw, plotText, showEmpty, showToken, tokenAxis } from "./plots.js";
import { headline } from "./recap.js";
import { fillStory, fmt } from "./facts.js";

const READING = "#D55E00"; // Okabe-Ito vermillion: the piece being read
const READ = "#56B4E9";

export class RecurrenceView {
  /** `root`: chapter 2's section; `page`: the URL state (step); `onChange({ step })` as the reader moves the slider. */
  constructor(root, { page, onChange }) {
    this.$ = partsOf(root);
    this.page = page;
    this.answer = null;
    this.anchor = this.$("recurrence-plot"); // its nearness starts the experiment
    this.plots = [this.$("recurrence-plot"), this.$("recurrence-change")];
    const slider = this.$("recurrence-step");
    slider.addEventListener("input", () => {
      onChange({ step: Number(slider.value) });
      this.showStep();
      this.redraw();
    });
  }

  call(text, signal) {
    return api.recurrence(text, signal);
  }

  show(answer) {
    this.answer = answer;
    const slider = this.$("recurrence-step");
    slider.max = String(Math.max(answer.tokens.length - 1, 0));
    slider.value = String(Math.min(this.page.step, answer.tokens.length - 1));
    this.$("recurrence-rule").textContent = `Units shown: ${answer.rule}; hidden size ${answer.hidden_size}.`;
    this.showStep();
    this.redraw();
    this.tell();
  }

  get step() {
    return Number(this.$("recurrence-step").value);
  }

  redraw() {
    if (!this.answer) return;
    whenNear(this.$("recurrence-plot"), () => drawStates(this.$("recurrence-plot"), this.answer, this.step));
    whenNear(this.$("recurrence-change"), () => drawChange(this.$("recurrence-change"), this.answer, this.step));
  }

  /** The slider's label and the recurrence written out for the step, with its numbers. */
  showStep() {
    const { tokens, change, norm, equation } = this.answer;
    const t = this.step;
    const token = showToken(tokens[t]);
    const slider = this.$("recurrence-step");
    const label = `piece ${t + 1} of ${tokens.length}: “${token}”`;
    this.$("recurrence-step-value").textContent = label;
    slider.setAttribute("aria-valuetext", label);
    const rule = equation.split(",")[0].replace(/\(t-1\)/g, t === 0 ? "(-1)" : String(t - 1)).replace(/_t\b/g, `_${t}`);
    const before = t === 0 ? "h_(-1)" : `h_${t - 1}`;
    this.$("recurrence-equation").textContent =
      `Reading “${token}”: ${rule}   ‖h_${t} − ${before}‖ = ${fmt(change[t])}   ‖h_${t}‖ = ${fmt(norm[t])}`;
  }

  tell() {
    const { tokens, change, norm, hidden_size: hidden, model } = this.answer;
    const most = change.indexOf(Math.max(...change));
    const least = change.indexOf(Math.min(...change));
    const quote = (i) => `“${showToken(tokens[i])}”`;
    fillStory(this.$("recurrence-story"), {
      pieces: String(tokens.length), model, "biggest-token": quote(most), "biggest-change": fmt(change[most]),
      "smallest-token": quote(least), "smallest-change": fmt(change[least]), "final-norm": fmt(norm[norm.length - 1]),
      "max-norm": fmt(Math.sqrt(hidden)), hidden: String(hidden),
    });
    headline(2, `the ${model}'s state moves most at ${quote(most)} (‖h_t − h_(t−1)‖ = ${fmt(change[most])}).`);
  }
}

function drawStates(div, answer, step) {
  const { tokens, states, units } = answer;
  if (!tokens.length) {
    showEmpty(div, "Nothing to read.");
    return;
  }
  const labels = tokens.map((tok) => plotText(showToken(tok)));
  const trace = {
    type: "heatmap", z: states, x: units.map((_, i) => i), y: tokens.map((_, i) => i),
    customdata: labels.map((tok) => units.map((u) => [tok, u])),
    hovertemplate: "after <b>%{customdata[0]}</b><br>unit %{customdata[1]}: %{z:.3f}<extra></extra>",
    colorscale: GATE_SCALE, zmin: -1, zmax: 1, showscale: false, xgap: 1, ygap: 1, meta: { colorbarTitle: "h" },
  };
  const shown = units.map((_, i) => i).filter((i) => i % Math.ceil(units.length / 16) === 0);
  const layout = baseLayout({
    margin: { l: 70, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "unit" }, tickmode: "array", tickvals: shown, ticktext: shown.map((i) => String(units[i])), showgrid: false, zeroline: false },
    yaxis: tokenAxis(tokens, { autorange: "reversed" }),
    shapes: [{ type: "rect", xref: "paper", x0: 0, x1: 1, y0: step - 0.5, y1: step + 0.5, line: { color: READING, width: 3 } }],
  });
  div.dataset.step = String(step);
  draw(div, [trace], layout, `${answer.model}-states`, answer);
}

function drawChange(div, answer, step) {
  const { tokens, change, norm } = answer;
  const x = tokens.map((_, i) => i);
  const labels = tokens.map((tok) => plotText(showToken(tok)));
  const data = [
    {
      type: "bar", name: "‖h_t − h_(t−1)‖", x, y: change, customdata: labels,
      marker: { color: x.map((i) => (i === step ? READING : READ)) },
      hovertemplate: "<b>%{customdata}</b><br>‖h_t − h_(t−1)‖ = %{y:.3f}<extra></extra>",
    },
    {
      type: "scatter", mode: "lines+markers", name: "‖h_t‖", x, y: norm, customdata: labels,
      line: { color: "#161b26", width: 1.5, dash: "dot" }, marker: { size: 6, symbol: "diamond", color: "#161b26" },
      hovertemplate: "<b>%{customdata}</b><br>‖h_t‖ = %{y:.3f}<extra></extra>",
    },
  ];
  const layout = baseLayout({
    margin: { l: 48, r: 12, t: 10, b: 60 },
    xaxis: tokenAxis(tokens, { tickangle: tokens.length > 8 ? -45 : 0 }),
    yaxis: { title: { text: "length of the vector" }, rangemode: "tozero", gridcolor: "#eceef3", zeroline: false },
    legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
  });
  div.dataset.step = String(step);
  draw(div, data, layout, `${answer.model}-state-change`, answer);
}
