// The heads chapter, what the heads answer says (POST /api/heads): each head's contribution through its
// rows of W_O, the cross heads ranked by how well they align with a recurrent model's attention,
// the effect of the heads switched off on the translation, and the prose's facts, all from the
// answer's own numbers. A helper of chapters/heads-lab.js.
import { fmt } from "./facts.js";
import { listOf, t } from "./i18n.js";
import { baseLayout, draw, OKABE_ITO, onPlot, plotText, showEmpty, themed, WEIGHT_SCALE } from "./plots.js";

/** "kind.layer.head" (counted from 1) <-> {kind, layer, head} (from 0): the URL's `off`, each head's id. */
export const offKey = (h) => `${h.kind}.${h.layer + 1}.${h.head + 1}`;
export function parseOff(value) {
  return (value || "").split(";").map((s) => /^(encoder|decoder|cross)\.(\d+)\.(\d+)$/.exec(s)).filter(Boolean)
    .map((m) => ({ kind: m[1], layer: Number(m[2]) - 1, head: Number(m[3]) - 1 })).filter((h) => h.layer >= 0 && h.head >= 0);
}

export const headName = (h) => t("scaling.scaling.head", { kind: t(`kind.${h.kind}`), layer: String(h.layer + 1), head: String(h.head + 1) });
export const shortName = (h) => t("heads.heads.short", { layer: String(h.layer + 1), head: String(h.head + 1) });

/** The prose's facts from /api/heads. */
export function headsFacts(answer) {
  const ranking = answer.alignment ? answer.alignment.ranking : [];
  const cross = answer.contributions.filter((c) => c.kind === "cross" && !c.off);
  const sharpest = cross.reduce((a, c) => (c.max_weight > a.max_weight ? c : a), cross[0]);
  const strongest = cross.reduce((a, c) => (c.mean > a.mean ? c : a), cross[0]);
  const top = listOf(ranking.slice(0, 3).map((r) => t("heads.heads.ranked-one", { head: shortName(r), score: fmt(r.score) })));
  return {
    reference: answer.alignment ? answer.alignment.reference : t("heads.heads.no-reference"),
    top: top || "–",
    sharpest: sharpest ? headName(sharpest) : "–", "sharpest-weight": sharpest ? fmt(sharpest.max_weight) : "–",
    "sharpest-adds": sharpest ? fmt(sharpest.mean) : "–",
    strongest: strongest ? headName(strongest) : "–", "strongest-adds": strongest ? fmt(strongest.mean) : "–",
    "strongest-weight": strongest ? fmt(strongest.max_weight) : "–",
    "same-head": t(sharpest === strongest ? "heads.heads.same-head" : "heads.heads.not-same-head"),
  };
}

/** Each head's mean contribution through W_O, one heatmap per kind; a click toggles a head (`onToggle`). */
export function drawContributions(div, answer, off, onToggle) {
  const data = [];
  const axes = {};
  const present = [...new Set(answer.contributions.map((c) => c.kind))]; // in the server's order
  present.forEach((kind, i) => {
    const rows = answer.contributions.filter((c) => c.kind === kind);
    const layers = Math.max(...rows.map((c) => c.layer)) + 1;
    const heads = Math.max(...rows.map((c) => c.head)) + 1;
    const z = Array.from({ length: layers }, () => Array(heads).fill(null));
    const text = Array.from({ length: layers }, () => Array(heads).fill(""));
    for (const c of rows) {
      z[c.layer][c.head] = c.mean;
      text[c.layer][c.head] = c.off ? t("heads.heads.off") : "";
    }
    const n = i ? String(i + 1) : "";
    data.push({ type: "heatmap", z, text, texttemplate: "%{text}", name: kind, xaxis: `x${n}`, yaxis: `y${n}`, colorscale: WEIGHT_SCALE,
      zmin: 0, showscale: false, xgap: 2, ygap: 2, meta: { colorbarTitle: "‖c_h W_O^(h)‖", kind },
      hovertemplate: t("heads.heads.contrib-hover", { kind: t(`kind.${kind}`) }),
      x: Array.from({ length: heads }, (_, h) => h + 1), y: Array.from({ length: layers }, (_, l) => l + 1) });
    const gap = 0.06;
    axes[`xaxis${n}`] = { domain: [i / present.length + gap / 2, (i + 1) / present.length - gap / 2], anchor: `y${n}`, dtick: 1,
      title: { text: t("heads.heads.kind-head", { kind: t(`kind.${kind}`) }) }, showgrid: false, zeroline: false };
    axes[`yaxis${n}`] = { anchor: `x${n}`, autorange: "reversed", dtick: 1, title: { text: i ? "" : t("heads.heads.layer") }, showgrid: false, zeroline: false };
  });
  div.dataset.off = off.map(offKey).join(";");
  draw(div, data, baseLayout({ margin: { l: 44, r: 8, t: 8, b: 44 }, ...axes }), `${answer.model}-head-contributions`, answer);
  onPlot(div, "plotly_click", (event) => {
    const point = event.points && event.points[0];
    if (!point || point.z === null) return;
    onToggle({ kind: point.data.meta.kind, layer: point.y - 1, head: point.x - 1 });
  });
}

/** The line saying what switching the heads off changed, from the answer's own numbers. */
export function showEffect(line, answer) {
  const effect = answer.effect;
  if (!effect) {
    line.textContent = t("heads.heads.every-on");
    line.dataset.changed = "";
    return;
  }
  const { original, changed } = effect;
  const delta = original.log_prob_heads_off - original.log_prob_all_heads;
  line.dataset.changed = String(changedIndices(answer).size);
  line.dataset.delta = String(delta);
  line.textContent = t("heads.heads.effect", { count: answer.heads_off.length, heads: listOf(answer.heads_off.map(headName)),
    changed: changed.translation, original: original.translation, all: fmt(original.log_prob_all_heads),
    off: fmt(original.log_prob_heads_off), delta: `${delta >= 0 ? "+" : ""}${fmt(delta)}` });
}

/** Indices of the changed translation's pieces that differ from the original's at the same place. */
export function changedIndices(answer) {
  if (!answer.effect) return new Set();
  const [a, b] = [answer.effect.original.tokens, answer.effect.changed.tokens];
  return new Set(b.map((tok, i) => (tok === a[i] ? -1 : i)).filter((i) => i >= 0));
}

/** The cross heads ranked by overlap with the reference model's alignment. */
export function drawRanking(div, answer) {
  if (!answer.alignment) {
    showEmpty(div, t("heads.heads.no-recurrent"));
    return;
  }
  const ranking = answer.alignment.ranking;
  const labels = ranking.map((r) => (r.off ? t("heads.heads.short-off", { name: shortName(r) }) : shortName(r)));
  draw(div, [{ type: "bar", orientation: "h", x: ranking.map((r) => r.score), y: labels, marker: { color: OKABE_ITO.green },
    hovertemplate: "%{y}: %{x:.3f}<extra></extra>" }],
  baseLayout({ margin: { l: 90, r: 8, t: 8, b: 40 }, yaxis: { autorange: "reversed", type: "category" },
    xaxis: { range: [0, 1], title: { text: t("heads.heads.overlap", { reference: plotText(answer.alignment.reference) }) }, gridcolor: themed("grid") } }),
  `${answer.model}-translation-heads`, answer.alignment);
}
