// The attention chapter's last part, the one line softmax(QK^T / √d_k) · V: one head of the Transformer's first
// encoder self-attention layer on the typed sentence (POST /api/lookup), its softmax rows as a
// heatmap (query piece x key piece), and the line written with the sentence's own sizes. The server
// recomputes the line from the layer's weights and says how far its mix of values is from the
// head's output in the model's own pass; the prose states that difference.
import * as api from "../api.js";
import { fillStory, fmt, mapTable, strongest } from "../facts.js";
import { t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { attentionTrace, baseLayout, draw as drawPlot, showToken, tokenAxis } from "../plots.js";
import { couldNot } from "../requests.js";
import { count } from "../url-state.js";

export const chapter = "attention";
/** The attention chapter's one line: softmax(QK^T / sqrt(d_k)) V on `head` of the first encoder layer. */
export const fetchLookup = (text, head, signal) => api.post("/api/lookup", { text, head }, signal);
export const title = "one line";
export const figures = ["lookup-plot", "lookup-head", "lookup-story"];
export const asks = "text";

/** The URL's `lhead`: the head of the one line, from 0 (kept within the model's heads when asked). */
export const state = { lhead: { read: (q) => ({ lhead: count(q.get("lhead")) }), write: (p) => String(p.lhead) } };

let lab = null;

export function mount(context) {
  lab = context;
  lab.part("lookup-head").addEventListener("change", (e) => {
    lab.page.set({ lhead: Number(e.target.value) });
    lab.ask({ lazy: true });
  });
}

export const keys = () => [null];
export const panels = () => [lab.part("lookup-plot")];
/** The URL's head, within the heads the catalogue says the model has (a link may name one it lacks). */
const headAsked = () => Math.max(0, Math.min(lab.page.lhead, (lab.catalog.withHeads[0]?.heads ?? 1) - 1));
export const ask = (text, signal) => fetchLookup(text, headAsked(), signal);
export const failure = (error) => couldNot(t("attention.lookup.what"), error);

const weightMap = (answer) => ({ weights: answer.weights, rows: answer.source_tokens, cols: answer.source_tokens });

/** The facts the prose states: the line with the sentence's sizes, the sharpest row, the check. */
function lookupFacts(answer) {
  const [S, dk] = answer.shapes.Q;
  let top = [0, 0];
  answer.weights.forEach((row, i) => row.forEach((w, j) => { if (w > answer.weights[top[0]][top[1]]) top = [i, j]; }));
  return {
    model: answer.model, head: String(answer.head + 1), heads: String(answer.heads), pieces: String(S), "d-k": String(dk),
    "d-model": String(answer.d_model), shape: `${S} × ${dk}`,
    line: `softmax((${S}×${dk}) · (${dk}×${S}) / √${dk}) · (${S}×${dk}) = ${S}×${dk}`,
    "top-query": showToken(answer.source_tokens[top[0]]), "top-key": showToken(answer.source_tokens[top[1]]),
    "top-weight": fmt(answer.weights[top[0]][top[1]]), difference: fmt(answer.max_abs_difference), scale: fmt(answer.output_scale),
  };
}

export function draw(answer) {
  const select = lab.part("lookup-head");
  if (select.options.length !== answer.heads) {
    select.replaceChildren(...Array.from({ length: answer.heads }, (_, i) => new Option(String(i + 1), String(i))));
  }
  select.value = String(answer.head);
  fillStory(lab.part("lookup-story"), lookupFacts(answer));
  const [plot] = panels();
  whenNear(plot, () => drawMap(plot, answer));
}

export function describe(answer) {
  const f = lookupFacts(answer);
  return t("attention.lookup.describe", { head: f.head, model: f.model, pieces: f.pieces, strongest: strongest(weightMap(answer)), difference: f.difference });
}

export function rows(answer) {
  return mapTable(weightMap(answer), t("attention.lookup.caption", { head: String(answer.head + 1), model: answer.model }), t("order.order.query"));
}

function drawMap(div, answer) {
  const tokens = answer.source_tokens;
  const layout = baseLayout({
    margin: { l: 60, r: 12, t: 8, b: 60 },
    xaxis: tokenAxis(tokens, { title: { text: t("attention.lookup.key-axis"), standoff: 6 }, tickangle: tokens.length > 8 ? -45 : 0 }),
    yaxis: tokenAxis(tokens, { title: { text: t("attention.lookup.query-axis"), standoff: 6 }, autorange: "reversed" }),
  });
  div.dataset.head = String(answer.head);
  drawPlot(div, [attentionTrace(weightMap(answer))], layout, `${answer.model}-lookup-L1H${answer.head + 1}`, answer);
}
