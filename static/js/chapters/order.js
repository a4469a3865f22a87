// The order chapter, putting order back: self-attention alone cannot tell word order. The typed words are
// shuffled with a seed (the URL's `shuffle`); with positional encoding off, the shuffled sentence's
// encoder map is the original's with rows and columns permuted (the max abs difference is float
// rounding), with it on it is not, and the translation changes (POST /api/order). Below, the
// sinusoidal table itself and the similarity PE(i) . PE(j) of its rows.
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { listOf, t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { GATE_SCALE, WEIGHT_SCALE, attentionTrace, baseLayout, draw as drawPlot, plotText, showToken, tokenAxis } from "../plots.js";
import { couldNot } from "../requests.js";
import * as store from "../store.js";
import { count } from "../url-state.js";

export const chapter = "order";
/** The order chapter: the source shuffled (`seed`), encoder maps with positional encoding off and on. */
export const fetchOrder = (text, seed, signal) => api.post("/api/order", { text, seed }, signal);
export const title = "order experiment";
export const figures = ["order-maps", "order-pe", "order-shuffle", "order-seed", "order-head", "order-story"];
export const asks = "text";

/** The URL's `shuffle` (the seed) and `ohead` (the head, from 0). */
export const state = {
  shuffle: { read: (q, { opening }) => ({ shuffle: count(q.get("shuffle")) || opening.seed }), write: (p) => String(p.shuffle) },
  ohead: { read: (q) => ({ ohead: count(q.get("ohead")) }), write: (p) => String(p.ohead) },
};

let lab = null;
let answer = null; // the answer drawn

/** Below this the two maps are the same up to float32 rounding. */
const ROUNDING = 1e-5;

function orderFacts(answer) {
  const { checks, translations: said, positional_encoding: pe } = answer;
  const [off, on] = [checks.pe_off.max_abs_difference, checks.pe_on.max_abs_difference];
  const sim = pe.similarity[0];
  return {
    model: answer.model, shuffled: answer.shuffled_text, permutation: listOf(answer.permutation, { style: "narrow" }),
    "off-difference": fmt(off), "on-difference": fmt(on),
    "off-verdict": t(off < ROUNDING ? "order.order.rounding" : "order.order.more-than-rounding"),
    "on-verdict": t(on < ROUNDING ? "order.order.as-small" : "order.order.far-above"),
    "on-original": said.pe_on.original, "on-shuffled": said.pe_on.shuffled,
    "off-original": said.pe_off.original, "off-shuffled": said.pe_off.shuffled,
    "on-change": t(said.pe_on.original === said.pe_on.shuffled ? "order.order.same-translation" : "order.order.different-translation"),
    "off-change": t(said.pe_off.original === said.pe_off.shuffled ? "order.order.same" : "order.order.not-same"),
    "sim-self": fmt(sim[0]), "sim-next": sim.length > 1 ? fmt(sim[1]) : "–", "sim-far": fmt(sim[sim.length - 1]),
    far: String(sim.length - 1),
    "sim-direction": t(sim.length > 2 && sim[1] > sim[sim.length - 1] ? "order.order.alike" : "order.order.not-alike"),
  };
}

/** The shuffle button (a new seed, measured at once) and the head shown, from and to the URL (shuffle, ohead). */
export function mount(context) {
  lab = context;
  const { part, page } = lab;
  part("order-shuffle").addEventListener("click", () => {
    page.set({ shuffle: page.shuffle + 1 });
    lab.ask();
  });
  part("order-head").addEventListener("change", (e) => {
    page.set({ ohead: Number(e.target.value) });
    if (answer) show(answer);
  });
}

export const keys = () => [null];
export const panels = () => [lab.part("order-maps"), lab.part("order-pe")];
/** The sentence, its words shuffled with the URL's seed. */
export const ask = (text, signal) => fetchOrder(text, lab.page.shuffle, signal);
export const failure = (error) => couldNot(t("order.order.what"), error);

export function draw(next) {
  answer = next;
  const facts = orderFacts(answer);
  fillStory(lab.part("order-story"), facts);
  lab.part("order-seed").textContent = t("order.order.seed", { seed: String(lab.page.shuffle), permutation: listOf(answer.permutation, { style: "narrow" }) });
  store.headline(chapter, t("order.order.headline", { off: facts["off-difference"], on: facts["on-difference"] }));
  show(answer);
}

/** The head picked, within the heads the answer has. */
function headOf(shown) {
  return Math.min(lab.page.ohead, shown.checks.pe_off.original.length - 1);
}

function show(shown) {
  const heads = shown.checks.pe_off.original.length;
  const select = lab.part("order-head");
  if (select.options.length !== heads) {
    select.replaceChildren(...Array.from({ length: heads }, (_, i) => new Option(String(i + 1), String(i))));
  }
  const head = headOf(shown);
  select.value = String(head);
  const [maps, table] = panels();
  whenNear(maps, () => drawMaps(maps, shown, head));
  whenNear(table, () => drawTable(table, shown));
}

export function describe(shown, key, plot) {
  if (plot?.id === "order-pe") {
    const { table, similarity } = shown.positional_encoding;
    const last = similarity.length - 1;
    return t("order.order.pe-describe", { positions: String(table.length), dimensions: String(table[0]?.length ?? 0), self: fmt(similarity[0][0]),
      next: fmt(similarity[0][Math.min(1, last)]), last: String(last), far: fmt(similarity[0][last]) });
  }
  const f = orderFacts(shown);
  return t("order.order.describe", { shuffled: f.shuffled, model: f.model, off: f["off-difference"], offVerdict: f["off-verdict"],
    on: f["on-difference"], onVerdict: f["on-verdict"], original: f["on-original"], shuffledTranslation: f["on-shuffled"] });
}

export function rows(shown, key, plot) {
  if (plot?.id === "order-pe") {
    const { table, similarity } = shown.positional_encoding;
    return {
      caption: t("order.order.pe-caption"),
      headers: [t("order.order.position"), ...table[0].map((_, d) => t("order.order.dimension-at", { index: String(d) })), ...similarity.map((_, j) => `· PE(${j})`)],
      rows: table.map((row, i) => [String(i), ...row.map(fmt), ...similarity[i].map(fmt)]),
    };
  }
  const head = headOf(shown);
  const maps = [["off", "original", shown.source_tokens], ["off", "shuffled", shown.shuffled_tokens],
    ["on", "original", shown.source_tokens], ["on", "shuffled", shown.shuffled_tokens]];
  return {
    caption: t("order.order.caption", { layer: String(shown.layer + 1), head: String(head + 1) }),
    headers: [t("order.order.pe"), t("order.order.sentence"), t("order.order.query"), t("order.order.key"), t("attention.scores.weight-axis")],
    rows: maps.flatMap(([pe, which, tokens]) => shown.checks[`pe_${pe}`][which][head].flatMap((row, i) =>
      row.map((w, j) => [t(pe === "on" ? "order.order.on" : "order.order.off"), t(which === "original" ? "order.order.original" : "order.order.shuffled"), showToken(tokens[i]), showToken(tokens[j]), fmt(w)]))),
  };
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
    data.push(attentionTrace(map, { xaxis: `x${n}`, yaxis: `y${n}`, name: t("order.order.trace", { pe: t(check === "pe_on" ? "order.order.on" : "order.order.off"),
      which: t(which === "original" ? "order.order.original" : "order.order.shuffled") }) }));
    const [col, row] = [i % 2, Math.floor(i / 2)];
    axes[`xaxis${n}`] = tokenAxis(tokens, { domain: [col * 0.52, col * 0.52 + 0.46], anchor: `y${n}`, tickangle: -45 });
    axes[`yaxis${n}`] = tokenAxis(tokens, { domain: [row ? 0 : 0.56, row ? 0.4 : 0.96], anchor: `x${n}`, autorange: "reversed" });
  });
  const title = (text, x, y) => ({ text: plotText(text), xref: "paper", yref: "paper", x, y, showarrow: false, yanchor: "bottom", font: { size: 12 } });
  const layout = baseLayout({ margin: { l: 60, r: 10, t: 24, b: 60 }, ...axes, annotations: [
    title(t("order.order.title-off-original"), 0.23, 0.97), title(t("order.order.title-off-shuffled"), 0.75, 0.97),
    title(t("order.order.title-on-original"), 0.23, 0.41), title(t("order.order.title-on-shuffled"), 0.75, 0.41),
  ] });
  div.dataset.head = String(head);
  div.dataset.permutation = answer.permutation.join(",");
  drawPlot(div, data, layout, `${answer.model}-order-L${answer.layer + 1}H${head + 1}`, answer);
}

/** The sinusoidal table (position x dimension) and PE(i) . PE(j). */
function drawTable(div, answer) {
  const pe = answer.positional_encoding;
  const positions = pe.table.map((_, i) => i);
  const layout = baseLayout({ margin: { l: 48, r: 10, t: 24, b: 44 },
    xaxis: { domain: [0, 0.62], title: { text: t("order.order.dimension") }, showgrid: false, zeroline: false },
    yaxis: { title: { text: t("order.order.position") }, autorange: "reversed", showgrid: false, zeroline: false },
    xaxis2: { domain: [0.7, 1], anchor: "y2", title: { text: t("order.order.position-j") }, showgrid: false, zeroline: false },
    yaxis2: { anchor: "x2", autorange: "reversed", title: { text: t("order.order.position-i") }, showgrid: false, zeroline: false },
    annotations: [
      { text: "PE(position, dimension)", xref: "paper", yref: "paper", x: 0.31, y: 1, yanchor: "bottom", showarrow: false },
      { text: "PE(i) · PE(j)", xref: "paper", yref: "paper", x: 0.85, y: 1, yanchor: "bottom", showarrow: false },
    ] });
  const data = [
    { type: "heatmap", z: pe.table, y: positions, colorscale: GATE_SCALE, zmin: -1, zmax: 1, showscale: false,
      name: "PE(position, dimension)",
      hovertemplate: t("order.order.pe-hover"), meta: { colorbarTitle: "PE" } },
    { type: "heatmap", z: pe.similarity, x: positions, y: positions, xaxis: "x2", yaxis: "y2", colorscale: WEIGHT_SCALE,
      showscale: false, name: "PE(i) · PE(j)", hovertemplate: "PE(%{y}) · PE(%{x}) = %{z:.4g}<extra></extra>", meta: { colorbarTitle: "dot" } },
  ];
  drawPlot(div, data, layout, `${answer.model}-positional-encoding`, answer);
}
