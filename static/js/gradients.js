// Chapter 3, vanishing gradients: how much gradient reaches each input position of the recurrent
// encoders without attention (log scale), as shipped and at their seeded initialization; the
// per-step factors behind those curves; how open an LSTM's gates are at each token; and the prose,
// whose every number comes from the same answers (vanishing-story.js).
import * as api from "./api.js";
import { partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { GATE_SCALE, baseLayout, draw, plotText, showEmpty, showToken, tokenAxis } from "./plots.js";
import { headline } from "./recap.js";
import { FACTORS, drawStepFactors } from "./step-factors.js";
import { fillStory } from "./facts.js";
import { storyFacts } from "./vanishing-story.js";

const GATE_NAMES = ["input", "forget", "output"];

/** The controls (input length, gate view) and the two plots of the last /api/gradients answer. */
export class GradientsView {
  /** `root`: chapter 3's section; `page`: the URL state (len, factor); `onChange({ length })` as
   * the reader moves the slider, `onChange({ factor })` when the factor view changes. */
  constructor(root, { catalog, page, onChange }) {
    const length = page.length;
    this.root = root;
    this.page = page;
    this.$ = partsOf(root);
    this.anchor = this.$("grad-plot"); // its nearness starts the experiment
    this.plots = ["grad-plot", "factor-plot", "gates-plot"].map(this.$);
    this.catalog = catalog;
    this.answer = null;
    this.longLag = null; // GET /api/long-lag, for the prose
    const factor = this.$("factor-view");
    factor.value = FACTORS[page.factor] ? page.factor : "shrink";
    if (factor.value !== page.factor) onChange({ factor: factor.value }); // the URL named no such view
    factor.addEventListener("change", () => {
      onChange({ factor: factor.value });
      if (this.answer) whenNear(this.$("factor-plot"), () => this.drawFactors());
    });
    const slider = this.$("grad-length");
    slider.max = String(catalog.limits.max_gradient_length);
    slider.value = String(length);
    this.showLength(length);
    slider.addEventListener("input", () => {
      this.showLength(Number(slider.value));
      onChange({ length: Number(slider.value) });
    });
    this.$("gate-view").addEventListener("change", () => {
      if (this.answer) whenNear(this.$("gates-plot"), () => this.drawGates());
    });
  }

  showLength(length) {
    this.$("grad-length-value").textContent = `${length} tokens`;
  }

  /** The sentence's tokens, repeated up to the URL's length. */
  call(text, signal) {
    return api.gradients(text, this.page.length, signal);
  }

  show(answer) {
    this.answer = answer;
    drawGradients(this.$("grad-plot"), answer, this.catalog);
    this.drawFactors();
    this.drawGates();
    this.tell();
  }

  /** The long-lag results arrived: the prose can say where each cell falls to chance. */
  setLongLag(results) {
    this.longLag = results;
    this.tell();
  }

  /** Every data-fact of the chapter, from the answers so far ("–" for what is not measured yet). */
  tell() {
    const facts = storyFacts(this.answer, this.catalog, this.longLag);
    fillStory(this.root, facts);
    if (this.answer) {
      headline(3, `${facts.distance} pieces back, ${facts.plain} keeps ${facts["plain-trained"]} of the last piece's gradient, ${facts.gated} ${facts["gated-trained"]}.`);
    }
  }

  drawFactors() {
    drawStepFactors(this.$("factor-plot"), this.answer, this.$("factor-view").value, this.catalog);
  }

  drawGates() {
    const model = (this.answer.gates && this.answer.gates.model) || "";
    this.$("gates-model").textContent = model;
    drawGates(this.$("gates-plot"), this.answer, this.$("gate-view").value, model);
  }
}

function drawGradients(div, response, catalog) {
  const curves = ((response && response.curves) || []).filter((c) => c.distance && c.distance.length);
  if (!curves.length) {
    showEmpty(div, "No recurrent model without attention is loaded, so there is nothing to measure.");
    return;
  }
  const data = curves.map((c) => {
    const weights = c.weights || "trained";
    const name = `${plotText(c.model)}, ${weights === "trained" ? "as shipped" : "at initialization"}`;
    return {
      type: "scatter",
      mode: c.distance.length > 40 ? "lines" : "lines+markers",
      name,
      x: c.distance,
      y: c.norm.map((v) => (v > 0 ? v : null)), // a log axis cannot show 0 (underflow): left as gaps
      line: { color: catalog.colour(c.model), width: 2.5, dash: weights === "trained" ? "solid" : "dot" },
      marker: { size: 5, symbol: catalog.marker(c.model) },
      hovertemplate: `<b>${name}</b><br>%{x} steps before the end<br>norm %{y:.3g}<extra></extra>`,
    };
  });
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "tokens before the end of the input" }, zeroline: false, gridcolor: "#eceef3" },
    yaxis: { title: { text: "gradient norm" }, type: "log", exponentformat: "power", gridcolor: "#eceef3", zeroline: false },
    legend: { x: 1, xanchor: "right", y: 1, bgcolor: "rgba(255,255,255,0.85)" },
  });
  draw(div, data, layout, `gradient-norm-${curves.map((c) => c.model).join("-vs-")}`, response);
}

/**
 * The gate activations to draw. `gates` (API: /api/gradients) holds, per gate, a token x unit
 * matrix for the units that vary most, and `mean`: each gate's average over all units per token.
 * view "mean": rows are the three gates; view "input" | "forget" | "output": rows are units.
 */
function gateMatrix(response, view) {
  const g = response && response.gates;
  if (!g) return null;
  const tokens = response.tokens || [];
  if (view === "mean") {
    const mean = g.mean || {};
    const names = GATE_NAMES.filter((n) => Array.isArray(mean[n]));
    if (!names.length) return null;
    return { rows: names.map((n) => `${n} gate`), values: names.map((n) => mean[n]), tokens, rowTitle: "" };
  }
  const perToken = g[view];
  if (!Array.isArray(perToken) || !perToken.length) return null;
  const units = g.units || perToken[0].map((_, i) => i);
  // token x unit -> unit x token, so tokens run along the x axis in both views
  const values = units.map((_, u) => perToken.map((row) => row[u]));
  return { rows: units.map((u) => `unit ${u}`), values, tokens, rowTitle: `${view} gate, most active units` };
}

function drawGates(div, response, view, model) {
  const m = gateMatrix(response, view);
  if (!m || !m.values.length || !m.tokens.length) {
    showEmpty(div, "No LSTM without attention is loaded, so there are no gates to show.");
    return;
  }
  const tokens = m.tokens.slice(0, m.values[0].length);
  const labels = tokens.map((t) => plotText(showToken(t)));
  const rows = m.rows.map(plotText);
  const trace = {
    type: "heatmap",
    z: m.values,
    x: tokens.map((_, i) => i),
    y: rows.map((_, i) => i),
    customdata: rows.map((name) => labels.map((tok, i) => [name, tok, i + 1])),
    hovertemplate: "<b>%{customdata[0]}</b><br>token %{customdata[2]}: <b>%{customdata[1]}</b><br>%{z:.3f}<extra></extra>",
    colorscale: GATE_SCALE,
    zmin: 0,
    zmax: 1,
    xgap: tokens.length > 60 ? 0 : 1,
    ygap: rows.length > 8 ? 0 : 2,
    showscale: false,
    meta: { colorbarTitle: "activation" },
  };
  const layout = baseLayout({
    margin: { l: 84, r: 12, t: 10, b: 70 },
    xaxis: tokenAxis(tokens, {
      tickangle: tokens.length > 8 ? -60 : 0,
      automargin: false, // rotated labels would otherwise cost a second layout pass per redraw
    }, 20),
    yaxis: {
      ...tokenAxis(m.rows, { autorange: "reversed" }),
      ...(rows.length > 8 ? { showticklabels: false, title: { text: plotText(m.rowTitle) } } : {}),
    },
  });
  div.dataset.view = view;
  draw(div, [trace], layout, `${model}-gates-${view}`, response);
}
