// The heads chapter's experiments on the heads (POST /api/heads) of the model the heads view shows (store
// `heads`): switch heads off and re-translate at once, the encoder's attention rollout, and linked
// views: hovering a token (in either text, or a row or column of a map) highlights it everywhere in
// the chapter (store `hover`); clicking source words sums their attention in the enlarged head.
// What the answer says (each head's contribution, the translation heads, the effect of the heads
// off, the prose) is drawn by heads-weighing.js.
import * as api from "../api.js";
import { el } from "../dom.js";
import { fillStory, fmt, mapTable, strongest } from "../facts.js";
import { label, listOf, t } from "../i18n.js";
import {
  changedIndices, drawContributions, drawRanking, headName, headsFacts, offKey, parseOff, shortName, showEffect,
} from "../heads-weighing.js";
import { whenNear } from "../lazy.js";
import {
  attentionTrace, baseLayout, draw as drawPlot, hoverShapes, MAP_SIDES, OKABE_ITO, plotText, shareColumnHover, showEmpty, showToken,
  themed, tokenAxis,
} from "../plots.js";
import { couldNot } from "../requests.js";
import * as store from "../store.js";

export const chapter = "heads";
export const fetchHeads = (text, model, headsOff, signal) =>
  api.post("/api/heads", { text, model, heads_off: headsOff }, signal);
export const title = "heads experiment";
export const figures = ["heads-contrib", "heads-ranking", "heads-summed", "heads-rollout", "heads-rollout-title",
  "heads-rollout-toggle", "heads-toggle", "heads-effect", "heads-source", "heads-target", "heads-story",
  "heads-more-story"];
export const asks = "text";

/** The URL's `off` (heads switched off, "kind.L.H;..." counted from 1), `rollout` (1: shown) and
 * `sel` (the source pieces whose attention is summed, from 0, comma-separated). */
export const state = {
  off: {
    read(q, { catalog }) {
      const fits = (h) => catalog.withHeads.some((m) => h.layer < m.layers && h.head < m.heads);
      return { off: parseOff(q.get("off")).filter(fits) };
    },
    write: (p) => p.off.map(offKey).join(";"),
  },
  rollout: { read: (q) => ({ rollout: q.get("rollout") === "1" }), write: (p) => (p.rollout ? "1" : "") },
  sel: {
    read: (q) => ({ sel: (q.get("sel") || "").split(",").filter((s) => /^\d+$/.test(s)).map(Number) }),
    write: (p) => p.sel.join(","),
  },
};

let lab = null;
let heads = null; // the heads view's model, selection and answer
let answer = null; // the answer drawn

/** The toggles (off, rollout) and the selection of source words (sel), from and to the URL; the shared hover. */
export function mount(context) {
  lab = context;
  const { part, page } = lab;
  const toggle = part("heads-rollout-toggle");
  toggle.checked = page.rollout;
  if (page.rollout) toggle.closest("details")?.setAttribute("open", ""); // a link that shows the rollout opens its fold
  toggle.addEventListener("change", () => {
    page.set({ rollout: toggle.checked });
    drawRollout();
  });
  part("heads-toggle").addEventListener("click", () => heads && switchOff({ kind: heads.kind, layer: heads.layer, head: heads.head }));
  for (const side of ["source", "target"]) {
    const strip = part(`heads-${side}`);
    strip.addEventListener("mouseover", (e) => e.target.dataset.index && store.set("hover", { side, index: Number(e.target.dataset.index) }));
    strip.addEventListener("mouseleave", () => store.set("hover", null));
  }
  part("heads-source").addEventListener("click", (e) => {
    if (!e.target.dataset.index) return;
    const index = Number(e.target.dataset.index);
    const sel = page.sel.includes(index) ? page.sel.filter((i) => i !== index) : [...page.sel, index].sort((a, b) => a - b);
    page.set({ sel });
    refresh();
  });
  hoverable(part("heads-rollout"));
  store.watch("heads", (value) => {
    const first = !heads; // as the page is built: nothing to follow yet
    const moved = !first && value.model !== heads.model;
    heads = value;
    if (!first) refresh();
    if (moved) lab.ask({ lazy: true }); // the chapter measures the model it shows
  });
  store.watch("hover", highlight);
}

export const keys = () => (lab.catalog.withHeads.length ? [null] : []);
export const panels = () => [lab.part("heads-contrib"), lab.part("heads-ranking")];
/** The heads of the model the heads view shows, with the URL's heads off. */
export const ask = (text, signal) => fetchHeads(text, heads.model, lab.page.off, signal);
export const failure = (error) => couldNot(t("heads.heads-lab.what"), error);

export function draw(next) {
  answer = next;
  const facts = headsFacts(answer);
  fillStory(lab.part("heads-story"), facts);
  fillStory(lab.part("heads-more-story"), facts);
  if (answer.alignment && answer.alignment.ranking.length) {
    store.headline(chapter, t("heads.heads-lab.headline", { reference: answer.alignment.reference, top: facts.top }));
  }
  showTexts(answer);
  showEffect(lab.part("heads-effect"), answer);
  const [contrib, ranking] = panels();
  whenNear(contrib, () => drawContributions(contrib, answer, lab.page.off, switchOff));
  whenNear(ranking, () => drawRanking(ranking, answer));
  refresh();
}

/** Switch head `h` off, or back on, and measure again at once. */
function switchOff(h) {
  const key = offKey(h);
  const { off } = lab.page;
  lab.page.set({ off: off.some((o) => offKey(o) === key) ? off.filter((o) => offKey(o) !== key) : [...off, h] });
  lab.ask();
}

/** The heads view's selection or answer changed: the views that follow it. */
function refresh() {
  const { part, page } = lab;
  const key = offKey({ kind: heads.kind, layer: heads.layer, head: heads.head });
  const isOff = page.off.some((o) => offKey(o) === key);
  label(part("heads-toggle"), isOff ? "heads.heads-lab.switch-on" : "heads.heads-toggle");
  part("heads-toggle").setAttribute("aria-pressed", String(isOff));
  for (const span of part("heads-source").children) span.classList.toggle("token--selected", page.sel.includes(Number(span.dataset.index)));
  drawRollout();
  whenNear(part("heads-summed"), drawSummed);
}

function showTexts(shown) {
  const strip = (id, tokens, marked) => lab.part(id).replaceChildren(...tokens.map((tok, i) => {
    const span = el(marked && marked.has(i) ? "mark" : "span", "token", showToken(tok));
    span.dataset.index = String(i);
    span.tabIndex = 0;
    return span;
  }));
  strip("heads-source", shown.source_tokens);
  strip("heads-target", shown.target_tokens, changedIndices(shown));
}

/** A Plotly hover on the rollout: its column's source token, for the whole chapter. */
const hoverable = (div) => shareColumnHover(div, () => "encoder", (hover) => store.set("hover", hover));

/** Hover: the token outlined in both texts and in the rollout, if drawn (the enlarged head does its own). */
function highlight(hover) {
  for (const side of ["source", "target"]) {
    for (const span of lab.part(`heads-${side}`).children) {
      span.classList.toggle("token--hover", !!hover && hover.side === side && Number(span.dataset.index) === hover.index);
    }
  }
  const div = lab.part("heads-rollout");
  if (div.dataset.state === "drawn" && !div.dataset.stale) window.Plotly.relayout(div, { shapes: hoverShapes("encoder", hover) });
  document.documentElement.dataset.headsHover = hover ? `${hover.side}.${hover.index}` : "";
}

function drawRollout() {
  const div = lab.part("heads-rollout");
  const shown = lab.page.rollout;
  div.closest("figure").hidden = !shown;
  if (!shown) showEmpty(div, t("heads.heads-lab.tick-rollout"));
  if (!shown || !answer) return;
  whenNear(div, () => {
    const { rollout, source_tokens: tokens, model } = answer;
    const layer = Math.min(heads.layer, rollout.length - 1);
    const trace = attentionTrace({ weights: rollout[layer], rows: tokens, cols: tokens });
    div.dataset.layer = String(layer);
    drawPlot(div, [trace], baseLayout({ margin: { l: 60, r: 12, t: 8, b: 60 }, shapes: hoverShapes("encoder", store.get("hover")),
      xaxis: tokenAxis(tokens, { tickangle: -45 }), yaxis: tokenAxis(tokens, { autorange: "reversed" }) }),
    `${model}-rollout-L${layer + 1}`, answer);
    label(lab.part("heads-rollout-title"), "heads.heads-lab.rollout-title", { layer: String(layer + 1) });
  });
}

/** The enlarged head's rows, each the sum of its weights on the selected source pieces. */
function drawSummed() {
  const div = lab.part("heads-summed");
  const { kind, layer, head, attention, model, failed } = heads;
  if (!attention) { // the heads view's answer has not come (yet, or at all: then it says why)
    if (failed) showEmpty(div, failed);
    return;
  }
  const map = attention.maps.find((m) => m.kind === kind && m.layer === layer && m.head === head);
  if (!map || MAP_SIDES[kind].cols[0] !== "source") {
    showEmpty(div, t("heads.heads-lab.pick-kind"));
    return;
  }
  const { sel, y } = summed(map);
  if (!sel.length) {
    showEmpty(div, t("heads.heads-lab.click-words"));
    return;
  }
  div.dataset.selected = sel.join(",");
  drawPlot(div, [{ type: "bar", x: map.rows.map((_, i) => i), y, marker: { color: OKABE_ITO.blue },
    customdata: map.rows.map((tok) => plotText(showToken(tok))), hovertemplate: t("heads.heads-lab.summed-hover") }],
  baseLayout({ margin: { l: 44, r: 8, t: 8, b: 50 }, xaxis: tokenAxis(map.rows), yaxis: { range: [0, 1], title: { text: t("heads.heads-lab.summed") }, gridcolor: themed("grid") } }),
  `${model}-${kind}-L${layer + 1}H${head + 1}-summed`, { map, selected: sel, summed: y });
}

/** The selected source pieces, and each row's weight on them summed. */
function summed(map) {
  const sel = lab.page.sel.filter((j) => j < map.cols.length);
  return { sel, y: map.weights.map((row) => sel.reduce((s, j) => s + row[j], 0)) };
}

/** The enlarged head's map and the selection summed over it, or null when the summed plot shows none. */
function summedShown() {
  const { kind, layer, head, attention } = heads;
  const map = attention && attention.maps.find((m) => m.kind === kind && m.layer === layer && m.head === head);
  if (!map || MAP_SIDES[kind].cols[0] !== "source") return null;
  return { map, ...summed(map) };
}

/** The rollout map drawn: through the enlarged layer. */
function rolloutShown(shown) {
  const layer = Math.min(heads.layer, shown.rollout.length - 1);
  return { layer, map: { weights: shown.rollout[layer], rows: shown.source_tokens, cols: shown.source_tokens } };
}

/** Each of its figures in words: the contributions (with the prose's facts), the ranking, the sum, the rollout. */
export function describe(shown, key, plot) {
  if (plot?.id === "heads-ranking") {
    const ranking = shown.alignment ? shown.alignment.ranking : [];
    const last = ranking.at(-1);
    const said = { model: shown.model, reference: shown.alignment?.reference ?? t("heads.heads.no-reference"), top: headsFacts(shown).top };
    return last ? t("heads.heads-lab.ranking-last", { ...said, last: shortName(last), score: fmt(last.score) }) : t("heads.heads-lab.ranking", said);
  }
  if (plot?.id === "heads-summed") {
    const s = summedShown();
    if (!s || !s.sel.length) return ""; // shown empty: its message says why
    const top = s.y.indexOf(Math.max(...s.y));
    return t("heads.heads-lab.summed-describe", { words: listOf(s.sel.map((j) => t("quote", { text: showToken(s.map.cols[j]) }))),
      top: showToken(s.map.rows[top]), value: fmt(s.y[top]), all: listOf(s.y.map(fmt)) });
  }
  if (plot?.id === "heads-rollout") {
    const { layer, map } = rolloutShown(shown);
    return t("heads.heads-lab.rollout-describe", { model: shown.model, layer: String(layer + 1), looks: strongest(map) });
  }
  const f = headsFacts(shown);
  const told = t("heads.heads-lab.describe", { model: shown.model, sharpest: f.sharpest, sharpestWeight: f["sharpest-weight"], sharpestAdds: f["sharpest-adds"],
    strongest: f.strongest, strongestAdds: f["strongest-adds"], same: f["same-head"], reference: f.reference, top: f.top });
  if (!shown.heads_off.length) return told;
  const off = t("heads.heads-lab.off", { count: shown.heads_off.length, translation: shown.effect?.changed.translation ?? "" });
  return t("sentences.two", { first: told, second: off });
}

export function rows(shown, key, plot) {
  if (plot?.id === "heads-ranking") {
    return {
      caption: t("heads.heads-lab.ranking-caption", { model: shown.model, reference: shown.alignment?.reference ?? t("heads.heads.no-reference") }),
      headers: [t("heads.heads-lab.head"), t("heads.heads-lab.overlap-short")],
      rows: (shown.alignment ? shown.alignment.ranking : []).map((r) => [r.off ? t("heads.heads.short-off", { name: shortName(r) }) : shortName(r), fmt(r.score)]),
    };
  }
  if (plot?.id === "heads-summed") {
    const s = summedShown() || { map: { rows: [] }, y: [] };
    return { caption: t("heads.heads-lab.summed-caption"),
      headers: [t("heads.heads-lab.row"), t("heads.heads-lab.summed")], rows: s.map.rows.map((tok, i) => [showToken(tok), fmt(s.y[i])]) };
  }
  if (plot?.id === "heads-rollout") {
    const { layer, map } = rolloutShown(shown);
    return mapTable(map, t("heads.heads-lab.rollout-caption", { model: shown.model, layer: String(layer + 1) }), t("attention.scores.source-piece"));
  }
  const ranks = new Map((shown.alignment ? shown.alignment.ranking : []).map((r) => [`${r.layer}.${r.head}`, r.score]));
  return {
    caption: t("heads.heads-lab.caption", { model: shown.model }),
    headers: [t("heads.heads-lab.head"), t("heads.heads-lab.adds"), t("scaling.scaling.max-weight"), t("heads.heads-lab.overlap"), t("heads.heads-lab.switched-off")],
    rows: shown.contributions.map((c) => [headName(c), fmt(c.mean), fmt(c.max_weight),
      c.kind === "cross" && ranks.has(`${c.layer}.${c.head}`) ? fmt(ranks.get(`${c.layer}.${c.head}`)) : "–", t(c.off ? "heads.heads-lab.yes" : "heads.heads-lab.no")]),
  };
}
