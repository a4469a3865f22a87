// The first screen's answer: beside the text box, one model's translation of the sentence and, for
// each word it wrote, the source piece it weighed most. It goes where the box goes (sticky), so the
// reader sees the first key answered wherever they are. The model is the reader's (the URL's
// `glance`, the story's last model by default). A view of the same shape as the chapters'
// (contents.js), fed by the compare stream; it lives in the composer, not in a chapter.
import { $, el } from "./dom.js";
import { fmt, pct } from "./facts.js";
import { label, t } from "./i18n.js";
import { showToken } from "./plots.js";
import { modelFailure } from "./requests.js";
import { defaultModel, knownModel } from "./url-state.js";

export const chapter = null;
export const title = "first screen";
export const figures = ["glance"];
export const asks = "typed";

/** The URL's `glance`: the model whose translation the first screen shows. */
export const state = {
  glance: { read: (q, { catalog }) => ({ glance: knownModel(q, "glance", catalog, defaultModel(catalog)) }), write: (p) => p.glance || "" },
};

let lab = null;
let model = null; // the model shown

export const root = () => $("composer");

export function mount(context) {
  lab = context;
  model = lab.page.glance;
  const picker = lab.part("glance-model");
  picker.replaceChildren(...lab.catalog.names.map((name) => {
    const option = el("option", "", name);
    option.value = name;
    return option;
  }));
  picker.value = model;
  picker.addEventListener("change", () => {
    model = picker.value;
    lab.page.set({ glance: model });
    lab.ask();
  });
}

export const keys = () => [null];
export const models = () => [model];
export const panels = () => [lab.part("glance-translation")];
export const ask = (text, signal) => lab.compared(model, signal);
export const failure = (error) => modelFailure(error, model);

/** The cross-attention the translation was written with: a recurrent model's one map, or the mean of the last layer's heads. */
export function lookedAt(answer) {
  const cross = answer.maps.filter((m) => m.kind === "cross");
  if (!cross.length) return null;
  const last = Math.max(...cross.map((m) => m.layer));
  const heads = cross.filter((m) => m.layer === last);
  const weights = heads[0].weights.map((row, i) => row.map((_, j) => heads.reduce((sum, m) => sum + m.weights[i][j], 0) / heads.length));
  return { rows: heads[0].rows, cols: heads[0].cols, weights, heads: heads.length, layer: last };
}

/** Each written word with the source piece it weighed most, and that weight. */
function looks(map) {
  return map.weights.map((row, i) => {
    const j = row.indexOf(Math.max(...row));
    return { word: showToken(map.rows[i]), piece: showToken(map.cols[j]), weight: row[j] };
  });
}

export function draw(answer) {
  const translation = lab.part("glance-translation");
  translation.classList.remove("is-pending");
  translation.textContent = answer.translation || t("bottleneck.cards.empty");
  const list = lab.part("glance-looks");
  const map = lookedAt(answer);
  const how = lab.part("glance-how");
  if (!map) {
    list.replaceChildren();
    label(how, "glance.no-attention", { name: answer.model });
  } else {
    list.replaceChildren(...looks(map).map(({ word, piece, weight }) => {
      const item = el("li", "glance__look");
      const source = el("span", "glance__piece", piece);
      source.lang = "fr";
      const written = el("span", "glance__word", word);
      written.lang = "en";
      item.append(written, el("span", "glance__arrow", "←"), source, el("span", "glance__weight", pct(weight)));
      item.style.setProperty("--weight", String(weight));
      return item;
    }));
    if (map.heads > 1) label(how, "glance.heads", { name: answer.model, heads: map.heads, layer: map.layer + 1 });
    else label(how, "glance.one-map", { name: answer.model });
  }
  const sentence = lab.part("glance-said");
  sentence.textContent = describe(answer);
}

export function describe(answer) {
  const map = lookedAt(answer);
  const translation = answer.translation || t("bottleneck.cards.empty");
  if (!map) return t("glance.describe.none", { name: answer.model, translation });
  const said = looks(map).map(({ word, piece, weight }) => t("map.looks-at", { row: word, column: piece, weight: fmt(weight) }));
  return t("glance.describe", { name: answer.model, translation, looks: said.join(t("list.separator")) });
}

export function rows(answer) {
  const map = lookedAt(answer);
  return {
    caption: t("glance.caption", { name: answer.model }),
    headers: [t("map.output-word"), t("glance.header.piece"), t("glance.header.weight")],
    rows: map ? looks(map).map(({ word, piece, weight }) => [word, piece, fmt(weight)]) : [],
  };
}
