// Chapter 5, deriving attention, one output word at a time: for every recurrent model with
// attention, side by side, the raw scores e_j of the word the reader picked, the softmax weights
// (the model's own, and re-normalised at the temperature slider's T), and the blend of the
// encoder's states they give (POST /api/scores); the prose from the first model's answer.
import * as api from "./api.js";
import { el, partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { GATE_SCALE, baseLayout, draw, plotText, showEmpty, showToken, tokenAxis } from "./plots.js";
import { headline } from "./recap.js";
import { Latest } from "./requests.js";
import { TEMPERATURES } from "./url-state.js";
import { fillStory, fmt } from "./facts.js";

const OWN = "#0072B2"; // Okabe-Ito blue: the model's weights (T = 1)
const AT_T = "#D55E00"; // vermillion: softmax(e / T)
const SCORE = "#009E73";
const PAUSE_MS = 60;

/** The slider's position (100 x log10 T) <-> T, three significant digits. */
const toT = (value) => Number((10 ** (Number(value) / 100)).toPrecision(3));
const toSlider = (t) => Math.round(100 * Math.log10(t));

export class ScoresView {
  /** `root`: chapter 5's section; `page`: the URL state (text, row, temp); `onChange(changes)` when the word or T changes. */
  constructor(root, { catalog, page, onChange }) {
    this.$ = partsOf(root);
    this.page = page;
    this.models = catalog.aligning.map((m) => m.name);
    this.targets = new Map(); // model -> its output pieces for the latest text
    this.latest = new Map(); // model name -> its Latest scores request
    this.timer = 0;
    this.panels = new Map(this.models.map((name) => [name, panel(catalog.info(name))]));
    const container = this.$("scores-panels");
    container.replaceChildren(...[...this.panels.values()].map((p) => p.figure));
    if (!this.models.length) container.append(el("p", "panel panel--note", "No recurrent model with attention is loaded."));
    const select = this.$("scores-row");
    select.addEventListener("change", () => this.pick(Number(select.value)));
    const slider = this.$("scores-temperature");
    [slider.min, slider.max] = TEMPERATURES.map(toSlider).map(String);
    slider.value = String(toSlider(page.temp));
    this.temperature = page.temp; // a shared link's T exactly, not the slider's nearest step
    this.showTemperature();
    slider.addEventListener("input", () => {
      this.temperature = toT(slider.value);
      onChange({ temp: this.temperature });
      this.showTemperature();
      this.later();
    });
    this.onChange = onChange;
  }

  /** A model's answer for the latest text (/api/compare): its output words fill the picker. */
  showAnswer(name, answer) {
    if (!this.panels.has(name)) return;
    this.targets.set(name, answer.target_tokens || []);
    this.fillRows();
    this.later();
  }

  /** Model `name` gave no answer for the latest text, so it has no word to score: say why. */
  showProblem(name, message) {
    if (!this.panels.has(name)) return;
    this.targets.delete(name);
    this.latest.get(name)?.cancel();
    const { plot, blend } = this.panels.get(name);
    for (const div of [plot, blend]) whenNear(div, () => showEmpty(div, message));
  }

  /** The reader picked output word `row` (the picker, or a click on an alignment grid's row). */
  pick(row) {
    this.onChange({ row });
    this.fillRows();
    this.later();
  }

  fillRows() {
    const lists = this.models.map((m) => this.targets.get(m) || []);
    const count = Math.max(0, ...lists.map((l) => l.length));
    const select = this.$("scores-row");
    const options = Array.from({ length: count }, (_, i) => {
      const words = [...new Set(lists.filter((l) => i < l.length).map((l) => showToken(l[i])))];
      return new Option(`${i + 1}: ${words.join(" / ")}`, String(i));
    });
    select.replaceChildren(...options);
    select.value = String(Math.min(this.page.row, Math.max(count - 1, 0)));
  }

  showTemperature() {
    const t = this.temperature;
    this.$("scores-temperature-value").textContent = `T = ${t}`;
    this.$("scores-temperature").setAttribute("aria-valuetext", `temperature ${t}`);
  }

  later() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.ask(), PAUSE_MS);
  }

  /** Ask each model about its row (the picked one, or its last word if it wrote fewer), when near. */
  ask() {
    const text = this.page.text.trim();
    const temperature = this.temperature;
    for (const name of this.models) {
      const targets = this.targets.get(name);
      const { plot, blend } = this.panels.get(name);
      if (!targets || !targets.length || !text) continue;
      const row = Math.min(this.page.row, targets.length - 1);
      whenNear(plot, async () => {
        if (!this.latest.has(name)) this.latest.set(name, new Latest());
        try {
          await this.latest.get(name).ask((signal) => api.scores(text, name, row, temperature, signal), (answer) => {
            drawScores(plot, answer);
            whenNear(blend, () => drawBlend(blend, answer));
            this.tell(name, answer);
          });
        } catch (error) {
          for (const div of [plot, blend]) showEmpty(div, `The scores could not be computed (${api.explain(error)}).`);
        }
      });
    }
  }

  tell(name, answer) {
    const { query_token: query, source_tokens: source, weights } = answer;
    const top = weights.indexOf(Math.max(...weights));
    const word = `“${showToken(query)}”`;
    const onto = `“${showToken(source[top])}”`;
    const change = answer.reweighted_entropy - answer.entropy;
    const facts = {
      word, model: name, "max-weight": fmt(answer.max_weight), "top-source": onto, temperature: String(answer.temperature),
      "max-reweighted": fmt(answer.reweighted_max_weight), "entropy-t": fmt(answer.reweighted_entropy),
      entropy: fmt(answer.entropy), "max-entropy": fmt(answer.max_entropy),
      direction: change > 0 ? "more spread out, towards the fog" : change < 0 ? "sharper, towards a spotlight" : "the model's own",
    };
    this.panels.get(name).readout.textContent =
      `${word} → ${onto}: weight ${fmt(answer.max_weight)}; entropy ${fmt(answer.entropy)} nats at T = 1, ${fmt(answer.reweighted_entropy)} at T = ${answer.temperature} (uniform: ${fmt(answer.max_entropy)}).`;
    if (name !== this.models[0]) return;
    fillStory(this.$("scores-story"), facts);
    headline(5, `${name}: ${word} puts ${fmt(answer.max_weight)} of its weight on ${onto}.`);
  }
}

/** A figure per model: its formula, a readout, the scores and weights plot, the blend plot. */
function panel(info) {
  const figure = el("figure", "panel");
  const caption = el("figcaption", "panel__caption");
  const readout = el("span", "scores-panel__readout");
  caption.append(el("span", "panel__title", info.summary), " ", el("code", "", info.name),
    el("code", "scores-panel__formula", ""), readout, el("span", "panel__note", ""));
  const plot = plotDiv(`scores-${info.name}`, "plot--scores", `Scores and softmax weights of ${info.name} for the picked output word`);
  const blend = plotDiv(`blend-${info.name}`, "plot--blend", `Encoder states of ${info.name} and their weighted blend, the context`);
  figure.append(caption, plot, blend);
  return { figure, plot, blend, readout, formula: caption.querySelector(".scores-panel__formula") };
}

function plotDiv(testid, size, label) {
  const div = el("div", `plot ${size}`);
  div.dataset.testid = testid;
  div.setAttribute("role", "group");
  div.setAttribute("aria-label", label);
  return div;
}

function drawScores(div, answer) {
  const figure = div.closest("figure");
  figure.querySelector(".scores-panel__formula").textContent = answer.formula;
  const tokens = answer.source_tokens;
  const x = tokens.map((_, i) => i);
  const labels = tokens.map((t) => plotText(showToken(t)));
  const bar = (name, y, color, axis, extra = {}) => ({
    type: "bar", name, x, y, customdata: labels, marker: { color }, xaxis: "x", yaxis: axis,
    hovertemplate: `<b>%{customdata}</b><br>${name}: %{y:.4g}<extra></extra>`, ...extra,
  });
  const data = [
    bar("score e_j", answer.scores, SCORE, "y", { showlegend: false }),
    bar("weight α_j (T = 1)", answer.weights, OWN, "y2"),
    bar(`softmax(e_j / ${answer.temperature})`, answer.reweighted, AT_T, "y2"),
  ];
  const layout = baseLayout({
    margin: { l: 52, r: 12, t: 28, b: 60 },
    barmode: "group",
    xaxis: tokenAxis(tokens, { anchor: "y2", tickangle: tokens.length > 8 ? -45 : 0 }),
    yaxis: { domain: [0.6, 1], title: { text: "score" }, gridcolor: "#eceef3", zeroline: true },
    yaxis2: { domain: [0, 0.48], range: [0, 1], title: { text: "weight" }, gridcolor: "#eceef3" },
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
  });
  div.dataset.row = String(answer.row);
  div.dataset.temperature = String(answer.temperature);
  draw(div, data, layout, `${answer.model}-scores-row${answer.row + 1}-T${answer.temperature}`, answer);
}

/** The encoder states h_j on the units shown, and below them their blend, the context. */
function drawBlend(div, answer) {
  const { blend, source_tokens: tokens, weights } = answer;
  div.closest("figure").querySelector(".panel__note").textContent =
    `Below the scores: each source piece's encoder state h_j and, under the line, the context the weights blend from them. Units: ${blend.rule}.`;
  const rows = [...tokens.map((t, j) => `${showToken(t)} (α ${fmt(weights[j])})`), "context Σ α_j h_j"];
  const z = [...blend.states, blend.context];
  const reach = Math.max(...z.flat().map(Math.abs), 1e-9);
  const trace = {
    type: "heatmap", z, x: blend.units.map((_, i) => i), y: rows.map((_, i) => i),
    customdata: rows.map((r) => blend.units.map((u) => [plotText(r), u])),
    hovertemplate: "<b>%{customdata[0]}</b><br>unit %{customdata[1]}: %{z:.3f}<extra></extra>",
    colorscale: GATE_SCALE, zmin: -reach, zmax: reach, showscale: false, xgap: 1, ygap: 1, meta: { colorbarTitle: "value" },
  };
  const layout = baseLayout({
    margin: { l: 110, r: 12, t: 8, b: 40 },
    xaxis: { title: { text: `unit (${blend.units.length} of ${blend.hidden_size})` }, showticklabels: false, showgrid: false, zeroline: false },
    yaxis: tokenAxis(rows, { autorange: "reversed" }),
    shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: rows.length - 1.5, y1: rows.length - 1.5, line: { color: "#161b26", width: 2 } }],
  });
  draw(div, [trace], layout, `${answer.model}-blend-row${answer.row + 1}`, answer);
}
