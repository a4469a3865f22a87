// The heads chapter, many heads: every layer x head of a model with self-attention (the Transformer) as
// small multiples in one figure (so it exports as one picture), plus the chosen head enlarged with
// its tokens on the axes. Answers come keyed by model from the one compare stream; the model shown
// follows the picked card (store `model`) when it has heads. The selection (kind, layer, head) has
// one owner, the URL state; this view shares it, with the shown model's answer (store `heads`), and
// outlines the token hovered anywhere in the chapter (store `hover`).
import { fmt, mapTable, sharpness, strongest } from "../facts.js";
import { label, t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import {
  shareColumnHover, WEIGHT_SCALE, attentionTrace, baseLayout, draw as drawPlot, hoverShapes, onPlot, plotText, showEmpty, showToken, tokenAxis,
} from "../plots.js";
import { modelFailure } from "../requests.js";
import * as store from "../store.js";

export const chapter = "heads";
export const title = "heads";
export const figures = ["heads-grid", "head-detail", "heads-model", "heads-note", "head-title", "kind-picker", "pick-layer", "pick-head"];
export const asks = "typed";

/** The URL's `kind` (of attention) and `head` ("layer.head", counted from 1). */
export const state = {
  kind: { read: (q, { catalog }) => ({ kind: catalog.kinds.includes(q.get("kind")) ? q.get("kind") : "cross" }), write: (p) => p.kind },
  head: {
    read(q, { catalog }) {
      const head = /^(\d+)\.(\d+)$/.exec(q.get("head") || "");
      const [layer, index] = head ? [Number(head[1]) - 1, Number(head[2]) - 1] : [-1, -1];
      const fits = catalog.withHeads.some((m) => layer >= 0 && layer < m.layers && index >= 0 && index < m.heads);
      return fits ? { layer, head: index } : { layer: 0, head: 0 };
    },
    write: (p) => `${p.layer + 1}.${p.head + 1}`,
  },
};

const KIND_AXES = {
  cross: ["heads.heads.axis.source", "heads.heads.axis.output"],
  encoder: ["heads.heads.axis.source-keys", "heads.heads.axis.source-queries"],
  decoder: ["heads.heads.axis.output-keys", "heads.heads.axis.output-queries"],
};

let lab = null;
let infos = new Map(); // model -> its catalogue entry, for the models with heads
let model = null; // the model shown
const answers = new Map(); // model -> its latest answer
let radios = [];

export function mount(context) {
  lab = context;
  const { part, page, catalog, root } = lab;
  infos = new Map(catalog.withHeads.map((m) => [m.name, m]));
  model = infos.has(page.model) ? page.model : catalog.withHeads[0]?.name;
  const first = catalog.withHeads[0];
  if (first) headline(first);
  radios = [...root.querySelectorAll('input[name="kind"]')];
  for (const input of radios) input.addEventListener("change", () => pick({ kind: input.value }));
  part("pick-layer").addEventListener("change", (e) => pick({ layer: Number(e.target.value) - 1 }));
  part("pick-head").addEventListener("change", (e) => pick({ head: Number(e.target.value) - 1 }));
  if (!model) {
    showEmpty(part("heads-grid"), ["heads.heads.none"]);
    showEmpty(part("head-detail"), ["heads.heads.none-detail"]);
    for (const control of [...radios, part("pick-layer"), part("pick-head")]) control.disabled = true;
    return;
  }
  showModel();
  hoverable(part("head-detail"));
  store.watch("model", follow);
  store.watch("hover", outline);
  share();
}

export const keys = () => [...infos.keys()];
/** Only the model shown has panels: another's failure is not this view's to say. */
export const panels = (name) => (name === model ? [lab.part("heads-grid"), lab.part("head-detail")] : []);

/** Model `name`'s answer from the compare stream (the one it had is for an older text). */
export function ask(text, signal, name) {
  answers.delete(name);
  return lab.compared(name, signal);
}

/** The message for `name`'s failed answer; the shown model's is shared with the heads lab, whose summed
 * figure is drawn from this answer and says why it is not. */
export function failure(error, name) {
  const message = modelFailure(error, name);
  if (name === model) share(message);
  return message;
}

/** The recap's line: how many questions the first model with heads asks at once. */
function headline(first) {
  store.headline(chapter, t("heads.heads.headline", { name: first.name, count: first.layers * first.heads, layers: String(first.layers), heads: String(first.heads) }));
}

export function draw(answer, name) {
  answers.set(name, answer);
  if (name === lab.catalog.withHeads[0]?.name) headline(lab.catalog.withHeads[0]); // again, in the page's language now
  if (name !== model) return;
  redraw();
  share();
}

/** The selection and the shown model's answer, for the heads lab; `failed`: why there is none (ask() let the last go). */
function share(failed = undefined) {
  const { kind, layer, head } = lab.page;
  store.set("heads", { model, kind, layer, head, attention: answers.get(model), failed });
}

/** Show `name`'s heads if it has any (the reader selected its card); else keep the model shown. */
function follow(name) {
  if (!infos.has(name) || name === model) return;
  model = name;
  showModel();
  redraw();
  share();
}

function pick(changes) {
  lab.page.set(changes);
  redraw();
  share();
}

/** The model's name in the caption, and only the kinds of attention it has. */
function showModel() {
  lab.part("heads-model").textContent = model;
  const kinds = infos.get(model).attention_kinds;
  if (!kinds.includes(lab.page.kind)) lab.page.set({ kind: kinds[0] });
  for (const input of radios) {
    input.disabled = !kinds.includes(input.value);
    input.checked = input.value === lab.page.kind;
  }
}

function redraw() {
  const answer = answers.get(model);
  if (!answer) return;
  fillPickers(answer);
  const { kind, layer, head } = lab.page;
  const [grid, detail] = [lab.part("heads-grid"), lab.part("head-detail")];
  const shown = model;
  whenNear(grid, () => drawHeadGrid(grid, shown, answer, kind, [layer, head], (l, h) => pick({ layer: l, head: h })));
  whenNear(detail, () => drawHeadDetail(detail, shown, answer, kind, layer, head));
}

/** One option per layer and per head of this kind; the choice kept within them. */
function fillPickers(answer) {
  const { page, part } = lab;
  const info = infos.get(model);
  const dims = mapsOfKind(answer, page.kind);
  const layers = dims.layers || info.layers;
  const heads = dims.heads || info.heads;
  const within = { layer: Math.min(page.layer, layers - 1), head: Math.min(page.head, heads - 1) };
  if (within.layer !== page.layer || within.head !== page.head) page.set(within);
  for (const [id, count, value] of [["pick-layer", layers, page.layer], ["pick-head", heads, page.head]]) {
    const select = part(id);
    if (select.options.length !== count) {
      select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i + 1))));
    }
    select.value = String(value + 1); // options count from 1, like the labels
  }
  label(part("head-title"), "heads.heads.title", { layer: String(page.layer + 1), head: String(page.head + 1) });
}

/** A Plotly hover on the enlarged head: its column's token (the map's kind says which text), for the whole chapter. */
const hoverable = (div) => shareColumnHover(div, (d) => d.dataset.kind, (hover) => store.set("hover", hover));

/** The hovered token outlined in the enlarged head (shapes only), when it is drawn and current. */
function outline(hover) {
  const div = lab.part("head-detail");
  if (div.dataset.state !== "drawn" || div.dataset.stale) return;
  window.Plotly.relayout(div, { shapes: hoverShapes(div.dataset.kind, hover) });
}

/** The enlarged head's map in `answer`, for the selection. */
function selectedMap(answer) {
  const { kind, layer, head } = lab.page;
  const { grid } = mapsOfKind(answer, kind);
  return grid[layer] && grid[layer][head];
}

/** The grid: its sharpest and its most even head; the enlarged head: each row's strongest column. */
export function describe(answer, name, plot) {
  const { kind, layer, head } = lab.page;
  const { grid, layers, heads } = mapsOfKind(answer, kind);
  const map = selectedMap(answer);
  const what = t(`heads.heads.kind.${kind}`);
  if (!map) return t("heads.heads.no-maps-of", { name, what });
  if (plot?.id === "heads-grid") {
    const maps = grid.flat().filter(Boolean).map((m) => ({ m, top: Math.max(...m.weights.flat()) }));
    const sharp = maps.reduce((a, b) => (b.top > a.top ? b : a));
    const even = maps.reduce((a, b) => (b.top < a.top ? b : a));
    const at = ({ m, top }) => t("heads.heads.at", { layer: String(m.layer + 1), head: String(m.head + 1), top: fmt(top) });
    return t("heads.heads.grid-describe", { name, what, layers: String(layers), heads: String(heads), rows: String(map.rows.length),
      cols: String(map.cols.length), sharp: at(sharp), even: at(even), layer: String(layer + 1), head: String(head + 1) });
  }
  return t("heads.heads.describe", { name, what, layers: String(layers), heads: String(heads), layer: String(layer + 1), head: String(head + 1),
    count: map.rows.length, share: fmt(sharpness(map.weights)), cols: String(map.cols.length), looks: strongest(map) });
}

export function rows(answer, name, plot) {
  const { kind, layer, head } = lab.page;
  const [cols, rowsAxis] = (KIND_AXES[kind] || ["heads.heads.axis.columns", "heads.heads.axis.rows"]).map((key) => t(key));
  if (plot?.id === "heads-grid") {
    const maps = mapsOfKind(answer, kind).grid.flat().filter(Boolean);
    return {
      caption: t("heads.heads.grid-caption", { name, what: t(`heads.heads.kind.${kind}`), rows: rowsAxis, cols }),
      headers: [t("heads.heads.grid-corner"), ...(maps[0] ? maps[0].cols.map(showToken) : [])],
      rows: maps.flatMap((m) => m.weights.map((row, i) => [
        t("heads.heads.grid-row", { head: t("heads.heads.short", { layer: String(m.layer + 1), head: String(m.head + 1) }), token: showToken(m.rows[i]) }), ...row.map(fmt)])),
    };
  }
  const map = selectedMap(answer) || { rows: [], cols: [], weights: [] };
  return mapTable(map, t("heads.heads.caption", { name, what: t(`heads.heads.kind.${kind}`), layer: String(layer + 1), head: String(head + 1), rows: rowsAxis, cols }), rowsAxis);
}

/** The maps of one kind, indexed by layer then head. */
function mapsOfKind(response, kind) {
  const maps = (response && response.maps ? response.maps : []).filter((m) => m.kind === kind);
  const layers = maps.reduce((n, m) => Math.max(n, m.layer + 1), 0);
  const heads = maps.reduce((n, m) => Math.max(n, m.head + 1), 0);
  const grid = Array.from({ length: layers }, () => Array(heads).fill(null));
  for (const m of maps) grid[m.layer][m.head] = m;
  return { grid, layers, heads };
}

/**
 * Small multiples as ONE heatmap: every head's matrix is a tile in a (layers x heads) mosaic, tiles
 * separated by one empty (null) row/column. One trace on one pair of axes draws many times faster
 * than a subplot per head, and the figure still exports as one picture.
 * `onPick(layer, head)` runs when a tile is clicked.
 */
function drawHeadGrid(div, name, response, kind, selected, onPick) {
  const { grid, layers, heads } = mapsOfKind(response, kind);
  const first = grid.flat().find(Boolean);
  if (!first) {
    showEmpty(div, t("heads.heads.no-maps", { model: name }));
    return;
  }
  const rowCount = first.rows.length;
  const colCount = first.cols.length;
  const rowLabels = first.rows.map((tok) => plotText(showToken(tok)));
  const colLabels = first.cols.map((tok) => plotText(showToken(tok)));
  const height = layers * (rowCount + 1) - 1;
  const width = heads * (colCount + 1) - 1;
  // token labels on hover for every cell, unless the mosaic is huge (long inputs): then only weights
  const labelled = height * width <= 40_000;
  const z = Array.from({ length: height }, () => Array(width).fill(null));
  const custom = labelled ? Array.from({ length: height }, () => Array(width).fill(null)) : null;
  for (let layer = 0; layer < layers; layer++) {
    for (let head = 0; head < heads; head++) {
      const map = grid[layer][head];
      if (!map) continue;
      const top = layer * (rowCount + 1);
      const left = head * (colCount + 1);
      for (let i = 0; i < rowCount; i++) {
        for (let j = 0; j < colCount; j++) {
          z[top + i][left + j] = map.weights[i][j];
          if (labelled) custom[top + i][left + j] = [layer + 1, head + 1, rowLabels[i], colLabels[j]];
        }
      }
    }
  }
  const trace = {
    type: "heatmap",
    z,
    customdata: custom,
    hovertemplate: labelled
      ? t("heads.heads.grid-hover")
      : t("heads.heads.grid-hover-short"),
    hoverongaps: false,
    colorscale: WEIGHT_SCALE,
    zmin: 0,
    zmax: 1,
    showscale: false,
    meta: { colorbarTitle: "weight", cellParts: [t("heads.heads.layer"), t("heads.heads-lab.head")] },
  };
  const compact = div.clientWidth < 520;
  const annotations = [];
  for (let head = 0; head < heads; head++) {
    annotations.push({ text: t(compact ? "heads.heads.h" : "heads.heads.head", { head: String(head + 1) }), x: head * (colCount + 1) + (colCount - 1) / 2,
      y: -0.5, yanchor: "bottom", showarrow: false, font: { size: 12, color: "#414a5c" } });
  }
  for (let layer = 0; layer < layers; layer++) {
    annotations.push({ text: t("heads.heads.l", { layer: String(layer + 1) }), x: -0.5, xanchor: "right", xshift: -4,
      y: layer * (rowCount + 1) + (rowCount - 1) / 2, showarrow: false, font: { size: 12, color: "#414a5c" } });
  }
  const shapes = [];
  if (selected && grid[selected[0]] && grid[selected[0]][selected[1]]) {
    const [layer, head] = selected;
    shapes.push({ type: "rect", x0: head * (colCount + 1) - 0.5, x1: head * (colCount + 1) + colCount - 0.5,
      y0: layer * (rowCount + 1) - 0.5, y1: layer * (rowCount + 1) + rowCount - 0.5, line: { color: "#e8542f", width: 3 } });
  }
  const layout = baseLayout({
    margin: { l: 30, r: 6, t: 24, b: 6 },
    xaxis: { visible: false, range: [-0.5, width - 0.5], fixedrange: true },
    yaxis: { visible: false, range: [height - 0.5, -0.5], fixedrange: true },
    annotations,
    shapes,
  });
  div.dataset.kind = kind;
  div.dataset.tile = `${rowCount}x${colCount}`;
  drawPlot(div, [trace], layout, `${name}-${kind}-heads`, response);
  onPlot(div, "plotly_click", (event) => {
    const point = event.points && event.points[0];
    const tile = point && div.dataset.tile && div.dataset.tile.split("x").map(Number);
    if (!tile || point.z === null || point.z === undefined) return;
    const [tileRows, tileCols] = tile; // a tile and the empty line after it
    onPick(Math.floor(point.y / (tileRows + 1)), Math.floor(point.x / (tileCols + 1)));
  });
}

/** The chosen head, enlarged, with its tokens on both axes. */
function drawHeadDetail(div, name, response, kind, layer, head) {
  const { grid } = mapsOfKind(response, kind);
  const map = grid[layer] && grid[layer][head];
  if (!map) {
    showEmpty(div, t("heads.heads.pick"));
    return;
  }
  const [xTitle, yTitle] = KIND_AXES[kind].map((key) => t(key));
  const layout = baseLayout({
    margin: { l: 60, r: 12, t: 8, b: 60 },
    xaxis: tokenAxis(map.cols, { title: { text: plotText(xTitle), standoff: 6 }, tickangle: map.cols.length > 8 ? -45 : 0 }),
    yaxis: tokenAxis(map.rows, { title: { text: plotText(yTitle), standoff: 6 }, autorange: "reversed" }),
  });
  div.dataset.kind = kind;
  drawPlot(div, [attentionTrace(map)], layout, `${name}-${kind}-L${layer + 1}H${head + 1}`, response);
}
