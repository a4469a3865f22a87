// Chapter 9, many heads: every layer x head of a model with self-attention (the Transformer) as
// small multiples in one figure (so it exports as one picture), plus the chosen head enlarged with
// its tokens on the axes.
import { partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { headline } from "./recap.js";
import { WEIGHT_SCALE, attentionTrace, baseLayout, draw, onPlot, plotText, showEmpty, showToken, tokenAxis } from "./plots.js";

const KIND_AXES = {
  cross: ["source", "output"],
  encoder: ["source (keys)", "source (queries)"],
  decoder: ["output so far (keys)", "output (queries)"],
};

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
function drawHeadGrid(div, model, response, kind, selected, onPick) {
  const { grid, layers, heads } = mapsOfKind(response, kind);
  const first = grid.flat().find(Boolean);
  if (!first) {
    showEmpty(div, `${model} returned no attention maps for this sentence.`);
    return;
  }
  const rows = first.rows.length;
  const cols = first.cols.length;
  const rowLabels = first.rows.map((t) => plotText(showToken(t)));
  const colLabels = first.cols.map((t) => plotText(showToken(t)));
  const height = layers * (rows + 1) - 1;
  const width = heads * (cols + 1) - 1;
  // token labels on hover for every cell, unless the mosaic is huge (long inputs): then only weights
  const labelled = height * width <= 40_000;
  const z = Array.from({ length: height }, () => Array(width).fill(null));
  const custom = labelled ? Array.from({ length: height }, () => Array(width).fill(null)) : null;
  for (let layer = 0; layer < layers; layer++) {
    for (let head = 0; head < heads; head++) {
      const map = grid[layer][head];
      if (!map) continue;
      const top = layer * (rows + 1);
      const left = head * (cols + 1);
      for (let i = 0; i < rows; i++) {
        for (let j = 0; j < cols; j++) {
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
      ? "layer %{customdata[0]}, head %{customdata[1]}<br><b>%{customdata[2]}</b> → %{customdata[3]}" +
        "<br>weight %{z:.3f}<extra></extra>"
      : "weight %{z:.3f}<br>click to enlarge<extra></extra>",
    hoverongaps: false,
    colorscale: WEIGHT_SCALE,
    zmin: 0,
    zmax: 1,
    showscale: false,
    meta: { colorbarTitle: "weight" },
  };
  const compact = div.clientWidth < 520;
  const annotations = [];
  for (let head = 0; head < heads; head++) {
    annotations.push({ text: compact ? `H${head + 1}` : `Head ${head + 1}`, x: head * (cols + 1) + (cols - 1) / 2,
      y: -0.5, yanchor: "bottom", showarrow: false, font: { size: 12, color: "#414a5c" } });
  }
  for (let layer = 0; layer < layers; layer++) {
    annotations.push({ text: `L${layer + 1}`, x: -0.5, xanchor: "right", xshift: -4,
      y: layer * (rows + 1) + (rows - 1) / 2, showarrow: false, font: { size: 12, color: "#414a5c" } });
  }
  const shapes = [];
  if (selected && grid[selected[0]] && grid[selected[0]][selected[1]]) {
    const [layer, head] = selected;
    shapes.push({ type: "rect", x0: head * (cols + 1) - 0.5, x1: head * (cols + 1) + cols - 0.5,
      y0: layer * (rows + 1) - 0.5, y1: layer * (rows + 1) + rows - 0.5, line: { color: "#e8542f", width: 3 } });
  }
  const layout = baseLayout({
    margin: { l: 30, r: 6, t: 24, b: 6 },
    xaxis: { visible: false, range: [-0.5, width - 0.5], fixedrange: true },
    yaxis: { visible: false, range: [height - 0.5, -0.5], fixedrange: true },
    annotations,
    shapes,
  });
  div.dataset.kind = kind;
  div.dataset.tile = `${rows}x${cols}`;
  draw(div, [trace], layout, `${model}-${kind}-heads`, response);
  onPlot(div, "plotly_click", (event) => {
    const point = event.points && event.points[0];
    const tile = point && div.dataset.tile && div.dataset.tile.split("x").map(Number);
    if (!tile || point.z === null || point.z === undefined) return;
    const [rows, cols] = tile; // a tile and the empty line after it
    onPick(Math.floor(point.y / (rows + 1)), Math.floor(point.x / (cols + 1)));
  });
}

/** The chosen head, enlarged, with its tokens on both axes. */
function drawHeadDetail(div, model, response, kind, layer, head) {
  const { grid } = mapsOfKind(response, kind);
  const map = grid[layer] && grid[layer][head];
  if (!map) {
    showEmpty(div, "Pick a layer and a head.");
    return;
  }
  const [xTitle, yTitle] = KIND_AXES[kind];
  const trace = attentionTrace(map);
  const layout = baseLayout({
    margin: { l: 60, r: 12, t: 8, b: 60 },
    xaxis: tokenAxis(map.cols, { title: { text: plotText(xTitle), standoff: 6 }, tickangle: map.cols.length > 8 ? -45 : 0 }),
    yaxis: tokenAxis(map.rows, { title: { text: plotText(yTitle), standoff: 6 }, autorange: "reversed" }),
  });
  div.dataset.kind = kind;
  draw(div, [trace], layout, `${model}-${kind}-L${layer + 1}H${head + 1}`, response);
}

/**
 * The heads view: the grid and the enlarged head of one model with heads (the selected card's
 * when it has them), the kind of attention, and the layer and head to enlarge. The selection has
 * one owner, the URL state `page` (kind, layer, head): this view reads it there and asks
 * `onChange(changes)` to change it (the reader picked another, or the model shown has fewer).
 */
export class HeadsView {
  /** `root`: chapter 9's section; the model shown first is the URL's (`page.model`) if it has heads. */
  constructor(root, { catalog, page, onChange }) {
    this.$ = partsOf(root);
    this.infos = new Map(catalog.withHeads.map((m) => [m.name, m]));
    this.model = this.infos.has(page.model) ? page.model : catalog.withHeads[0]?.name;
    this.answers = new Map(); // model -> its latest /api/attention answer
    Object.assign(this, { page, onChange });
    const first = catalog.withHeads[0];
    if (first) headline(9, `${first.name} asks ${first.layers * first.heads} questions at once per attention kind: ${first.layers} layers × ${first.heads} heads.`);
    this.radios = [...root.querySelectorAll('input[name="kind"]')];
    for (const input of this.radios) input.addEventListener("change", () => this.pick({ kind: input.value }));
    this.$("pick-layer").addEventListener("change", (e) => this.pick({ layer: Number(e.target.value) - 1 }));
    this.$("pick-head").addEventListener("change", (e) => this.pick({ head: Number(e.target.value) - 1 }));
    if (this.model) {
      this.showModel();
    } else {
      showEmpty(this.$("heads-grid"), "No model with layers of attention heads is loaded.");
      showEmpty(this.$("head-detail"), "The enlarged head appears here once such a model is available.");
      for (const control of [...this.radios, this.$("pick-layer"), this.$("pick-head")]) control.disabled = true;
    }
  }

  get kind() { return this.page.kind; }
  get layer() { return this.page.layer; }
  get head() { return this.page.head; }

  /** Show `name`'s heads if it has any (the reader selected its card); else keep the model shown. */
  follow(name) {
    if (!this.infos.has(name) || name === this.model) return;
    this.model = name;
    this.showModel();
    this.draw();
  }

  /** A model's answer for the latest text (those without heads are not this view's). */
  showAnswer(name, answer) {
    if (!this.infos.has(name)) return;
    this.answers.set(name, answer);
    if (name === this.model) this.draw();
  }

  /** Model `name` gave no answer for the latest text: if it is the one shown, say why. */
  showProblem(name, message) {
    if (!this.infos.has(name)) return;
    this.answers.delete(name);
    if (name !== this.model) return;
    for (const id of ["heads-grid", "head-detail"]) whenNear(this.$(id), () => showEmpty(this.$(id), message));
  }

  pick(changes) {
    this.onChange(changes);
    this.draw();
  }

  /** The model's name in the caption, and only the kinds of attention it has. */
  showModel() {
    this.$("heads-model").textContent = this.model;
    const kinds = this.infos.get(this.model).attention_kinds;
    if (!kinds.includes(this.kind)) this.onChange({ kind: kinds[0] });
    for (const input of this.radios) {
      input.disabled = !kinds.includes(input.value);
      input.checked = input.value === this.kind;
    }
  }

  draw() {
    const answer = this.answers.get(this.model);
    if (!answer) return;
    this.fillPickers(answer);
    const { model, kind, layer, head } = this;
    const onPick = (l, h) => this.pick({ layer: l, head: h });
    whenNear(this.$("heads-grid"), () => drawHeadGrid(this.$("heads-grid"), model, answer, kind, [layer, head], onPick));
    whenNear(this.$("head-detail"), () => drawHeadDetail(this.$("head-detail"), model, answer, kind, layer, head));
  }

  /** One option per layer and per head of this kind; the choice kept within them. */
  fillPickers(answer) {
    const info = this.infos.get(this.model);
    const dims = mapsOfKind(answer, this.kind);
    const layers = dims.layers || info.layers;
    const heads = dims.heads || info.heads;
    const within = { layer: Math.min(this.layer, layers - 1), head: Math.min(this.head, heads - 1) };
    if (within.layer !== this.layer || within.head !== this.head) this.onChange(within);
    for (const [id, count, value] of [["pick-layer", layers, this.layer], ["pick-head", heads, this.head]]) {
      const select = this.$(id);
      if (select.options.length !== count) {
        select.replaceChildren(...Array.from({ length: count }, (_, i) => new Option(String(i + 1))));
      }
      select.value = String(value + 1); // options count from 1, like the labels
    }
    this.$("head-title").textContent = `Layer ${this.layer + 1}, head ${this.head + 1}`;
  }
}
