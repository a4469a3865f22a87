// Chapter 10, next-token prediction (POST /api/predict): per output step the model's k likeliest
// next pieces (a table; click one to force it, and the model continues from there), greedy against
// a beam of the reader's size (the final candidates and the beam tree, drawn with Plotly).
import * as api from "./api.js";
import { el, partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { baseLayout, draw, plotText, showEmpty, showToken } from "./plots.js";
import { headline } from "./recap.js";
import { fillStory, fmt } from "./facts.js";

const STATUS = { kept: "#0072B2", finished: "#009E73", dropped: "#B0B6C3", forced: "#D55E00" };

export class PredictView {
  /** `root`: chapter 10's section; `page`: the URL state (pmodel, beam, prefix), changed through
   * `onChange(changes)`; `ask()`: search again (the reader changed the model, beam or prefix). */
  constructor(root, { catalog, page, onChange, ask }) {
    Object.assign(this, { page, onChange, ask });
    this.topK = catalog.defaults.top_k; // the server's (GET /api/health), whose answer it computed ahead
    this.$ = partsOf(root);
    this.anchor = this.$("predict-tree"); // its nearness starts the experiment
    this.plots = [this.$("predict-tree")];
    const select = this.$("predict-model");
    select.replaceChildren(...catalog.names.map((n) => new Option(n, n)));
    if (!catalog.info(page.pmodel)) onChange({ pmodel: (catalog.withHeads[0] || catalog.models[0]).name });
    select.value = page.pmodel;
    select.addEventListener("change", () => this.change({ pmodel: select.value, prefix: [] }));
    const beam = this.$("predict-beam");
    beam.max = String(catalog.limits.max_beam_size); // the server's bound (GET /api/health)
    beam.value = String(page.beam);
    this.$("predict-beam-value").textContent = String(page.beam);
    beam.addEventListener("input", () => {
      this.$("predict-beam-value").textContent = beam.value;
      this.change({ beam: Number(beam.value) });
    });
    this.$("predict-clear").addEventListener("click", () => this.change({ prefix: [] }));
    this.$("predict-table").addEventListener("click", (e) => {
      const cell = e.target.closest("button[data-step]");
      if (!cell || !this.answer) return;
      const step = Number(cell.dataset.step);
      this.change({ prefix: [...this.answer.target_tokens.slice(0, step), cell.dataset.token] });
    });
  }

  change(state) {
    this.onChange(state);
    this.ask();
  }

  /** Both searches for `text` (greedy and the beam), asked together. */
  call(text, signal) {
    const { pmodel, prefix, beam } = this.page;
    return Promise.all([1, beam].map((b) => api.predict(text, pmodel, prefix, this.topK, b, signal)));
  }

  show([greedy, wide]) {
    this.answer = greedy;
    this.table(greedy);
    const best = wide.candidates ? wide.candidates[0] : null;
    const first = greedy.steps[0];
    fillStory(this.$("predict-story"), {
      model: greedy.model, greedy: greedy.translation, "first-piece": first ? showToken(first.token) : "–",
      "first-probability": first ? fmt(first.probability) : "–", beam: String(this.page.beam),
      best: best ? best.translation : greedy.translation, "best-score": best ? fmt(best.score) : "–",
      verdict: !best ? "a beam of 1 is greedy search" : best.translation === greedy.translation ? "the same as greedy" : "not what greedy found",
      prefix: this.page.prefix.length ? this.page.prefix.map(showToken).join(" ") : "none",
    });
    headline(10, `${greedy.model}'s first piece is “${first ? showToken(first.token) : ""}” with probability ${first ? fmt(first.probability) : "–"}; greedy writes “${greedy.translation}”.`);
    const list = this.$("predict-candidates");
    list.replaceChildren(...(wide.candidates || []).map((c) =>
      el("li", "", `“${c.translation}”: log-probability ${fmt(c.log_prob)}, score ${fmt(c.score)}`)));
    const tree = this.$("predict-tree");
    if (wide.tree) whenNear(tree, () => drawTree(tree, wide));
    else showEmpty(tree, "Greedy search keeps one hypothesis: choose a beam of 2 or more to see the tree.");
  }

  table(answer) {
    const rows = answer.steps.map((step, s) => {
      const tr = el("tr", step.forced ? "predict-forced" : "");
      tr.append(el("th", "", `${s + 1}${step.forced ? " (forced)" : ""}`));
      for (const choice of step.top) {
        const button = el("button", choice.token === step.token ? "predict-choice predict-choice--chosen" : "predict-choice",
          `${showToken(choice.token)} ${fmt(choice.probability)}`);
        button.type = "button";
        Object.assign(button.dataset, { step: String(s), token: choice.token });
        const td = el("td");
        td.append(button);
        tr.append(td);
      }
      return tr;
    });
    this.$("predict-table").replaceChildren(...rows);
    this.$("predict-table").dataset.steps = String(rows.length);
  }
}

function drawTree(div, answer) {
  const x = [];
  const y = [];
  const colors = [];
  const labels = [];
  const edges = { x: [], y: [] };
  answer.tree.forEach((nodes, s) => nodes.forEach((n, i) => {
    x.push(s);
    y.push(i);
    colors.push(STATUS[n.status] || "#667085");
    labels.push(`${plotText(showToken(n.token))}<br>${n.status}, log p ${fmt(n.log_prob)}, score ${fmt(n.score)}`);
    if (n.parent !== null && n.parent !== undefined) edges.x.push(s - 1, s, null), edges.y.push(n.parent, i, null);
  }));
  const data = [
    { type: "scatter", mode: "lines", x: edges.x, y: edges.y, line: { color: "#c9ced8", width: 1 }, hoverinfo: "skip", showlegend: false },
    { type: "scatter", mode: "markers+text", x, y, text: answer.tree.flat().map((n) => plotText(showToken(n.token))),
      textposition: "middle right", marker: { color: colors, size: 10 }, customdata: labels,
      hovertemplate: "%{customdata}<extra></extra>", showlegend: false },
  ];
  div.dataset.nodes = String(x.length);
  draw(div, data, baseLayout({ margin: { l: 40, r: 40, t: 8, b: 40 }, xaxis: { title: { text: "step" }, dtick: 1, gridcolor: "#eceef3" },
    yaxis: { autorange: "reversed", title: { text: "rank in the step" }, showgrid: false } }), `${answer.model}-beam${answer.beam_size}-tree`, answer);
}
