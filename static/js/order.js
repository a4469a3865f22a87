// Chapter 8, putting order back: self-attention alone cannot tell word order. The typed words are
// shuffled with a seed (the URL's `shuffle`); with positional encoding off, the shuffled sentence's
// encoder map is the original's with rows and columns permuted (the max abs difference is float
// rounding), with it on it is not, and the translation changes (POST /api/order). Below, the
// sinusoidal table itself and the similarity PE(i) . PE(j) of its rows.
import * as api from "./api.js";
import { partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { GATE_SCALE, WEIGHT_SCALE, attentionTrace, baseLayout, draw, plotText, tokenAxis } from "./plots.js";
import { headline } from "./recap.js";
import { fillStory, fmt } from "./facts.js";

/** Below this the two maps are the same up to float32 rounding. */
export const ROUNDING = 1e-5;

export function orderFacts(answer) {
  const { checks, translations: t, positional_encoding: pe } = answer;
  const [off, on] = [checks.pe_off.max_abs_difference, checks.pe_on.max_abs_difference];
  const sim = pe.similarity[0];
  return {
    model: answer.model, shuffled: answer.shuffled_text, permutation: answer.permutation.join(", "),
    "off-difference": fmt(off), "on-difference": fmt(on),
    "off-verdict": off < ROUNDING ? "float rounding: the same map, its rows and columns permuted" : "more than rounding",
    "on-verdict": on < ROUNDING ? "as small: order made no difference here" : "far above rounding: the maps really differ",
    "on-original": t.pe_on.original, "on-shuffled": t.pe_on.shuffled,
    "off-original": t.pe_off.original, "off-shuffled": t.pe_off.shuffled,
    "on-change": t.pe_on.original === t.pe_on.shuffled ? "the same translation" : "a different translation",
    "off-change": t.pe_off.original === t.pe_off.shuffled ? "the same" : "not the same",
    "sim-self": fmt(sim[0]), "sim-next": sim.length > 1 ? fmt(sim[1]) : "–", "sim-far": fmt(sim[sim.length - 1]),
    far: String(sim.length - 1),
    "sim-direction": sim.length > 2 && sim[1] > sim[sim.length - 1] ? "more alike than distant ones" : "no more alike than distant ones",
  };
}

export class OrderView {
  /** `root`: chapter 8's section; `page`: the URL state (shuffle, ohead), changed through
   * `onChange(changes)` when the reader shuffles or picks a head; `ask()`: measure again. */
  constructor(root, { page, onChange, ask }) {
    Object.assign(this, { page, onChange, ask });
    this.$ = partsOf(root);
    this.anchor = this.$("order-maps"); // its nearness starts the experiment
    this.plots = [this.$("order-maps"), this.$("order-pe")];
    this.$("order-shuffle").addEventListener("click", () => {
      this.onChange({ shuffle: this.page.shuffle + 1 });
      this.ask();
    });
    this.$("order-head").addEventListener("change", (e) => {
      this.onChange({ ohead: Number(e.target.value) });
      if (this.answer) this.draw(this.answer);
    });
  }

  /** The sentence, its words shuffled with the URL's seed. */
  call(text, signal) {
    return api.order(text, this.page.shuffle, signal);
  }

  show(answer) {
    this.answer = answer;
    const facts = orderFacts(answer);
    fillStory(this.$("order-story"), facts);
    this.$("order-seed").textContent = `seed ${this.page.shuffle}: ${answer.permutation.join(", ")}`;
    headline(8, `shuffled, with positional encoding off the encoder's maps differ by ${facts["off-difference"]} (rounding); on, by ${facts["on-difference"]}.`);
    this.draw(answer);
  }

  draw(answer) {
    const heads = answer.checks.pe_off.original.length;
    const select = this.$("order-head");
    if (select.options.length !== heads) {
      select.replaceChildren(...Array.from({ length: heads }, (_, i) => new Option(String(i + 1), String(i))));
    }
    const head = Math.min(this.page.ohead, heads - 1);
    select.value = String(head);
    whenNear(this.$("order-maps"), () => drawMaps(this.$("order-maps"), answer, head));
    whenNear(this.$("order-pe"), () => drawTable(this.$("order-pe"), answer));
  }
}

/** Original and shuffled maps (columns) with the encoding off and on (rows), one figure. */
function drawMaps(div, answer, head) {
  const cells = [
    ["pe_off", "original", answer.source_tokens], ["pe_off", "shuffled", answer.shuffled_tokens],
    ["pe_on", "original", answer.source_tokens], ["pe_on", "shuffled", answer.shuffled_tokens],
  ];
  const data = [];
  const axes = {};
  cells.forEach(([check, which, tokens], i) => {
    const n = i ? String(i + 1) : "";
    const map = { weights: answer.checks[check][which][head], rows: tokens, cols: tokens };
    data.push(attentionTrace(map, { xaxis: `x${n}`, yaxis: `y${n}`, name: `${check} ${which}` }));
    const [col, row] = [i % 2, Math.floor(i / 2)];
    axes[`xaxis${n}`] = tokenAxis(tokens, { domain: [col * 0.52, col * 0.52 + 0.46], anchor: `y${n}`, tickangle: -45 });
    axes[`yaxis${n}`] = tokenAxis(tokens, { domain: [row ? 0 : 0.56, row ? 0.4 : 0.96], anchor: `x${n}`, autorange: "reversed" });
  });
  const title = (text, x, y) => ({ text: plotText(text), xref: "paper", yref: "paper", x, y, showarrow: false, yanchor: "bottom", font: { size: 12 } });
  const layout = baseLayout({ margin: { l: 60, r: 10, t: 24, b: 60 }, ...axes, annotations: [
    title("positional encoding off: original", 0.23, 0.97), title("off: shuffled", 0.75, 0.97),
    title("on: original", 0.23, 0.41), title("on: shuffled", 0.75, 0.41),
  ] });
  div.dataset.head = String(head);
  div.dataset.permutation = answer.permutation.join(",");
  draw(div, data, layout, `${answer.model}-order-L${answer.layer + 1}H${head + 1}`, answer);
}

/** The sinusoidal table (position x dimension) and PE(i) . PE(j). */
function drawTable(div, answer) {
  const pe = answer.positional_encoding;
  const positions = pe.table.map((_, i) => i);
  const layout = baseLayout({ margin: { l: 48, r: 10, t: 24, b: 44 },
    xaxis: { domain: [0, 0.62], title: { text: "dimension" }, showgrid: false, zeroline: false },
    yaxis: { title: { text: "position" }, autorange: "reversed", showgrid: false, zeroline: false },
    xaxis2: { domain: [0.7, 1], anchor: "y2", title: { text: "position j" }, showgrid: false, zeroline: false },
    yaxis2: { anchor: "x2", autorange: "reversed", title: { text: "position i" }, showgrid: false, zeroline: false },
    annotations: [
      { text: "PE(position, dimension)", xref: "paper", yref: "paper", x: 0.31, y: 1, yanchor: "bottom", showarrow: false },
      { text: "PE(i) · PE(j)", xref: "paper", yref: "paper", x: 0.85, y: 1, yanchor: "bottom", showarrow: false },
    ] });
  const data = [
    { type: "heatmap", z: pe.table, y: positions, colorscale: GATE_SCALE, zmin: -1, zmax: 1, showscale: false,
      hovertemplate: "position %{y}, dimension %{x}: %{z:.3f}<extra></extra>", meta: { colorbarTitle: "PE" } },
    { type: "heatmap", z: pe.similarity, x: positions, y: positions, xaxis: "x2", yaxis: "y2", colorscale: WEIGHT_SCALE,
      showscale: false, hovertemplate: "PE(%{y}) · PE(%{x}) = %{z:.4g}<extra></extra>", meta: { colorbarTitle: "dot" } },
  ];
  draw(div, data, layout, `${answer.model}-positional-encoding`, answer);
}
