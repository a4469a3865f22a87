// Shared Plotly helpers: safe labels, integer token axes, export buttons, empty states, palettes.
// Plotly reads labels as a small HTML dialect (<b>, <br>, <a>...), so every string that comes
// from the user or the models goes through `plotText` first.
//
// Plotly itself is loaded by the first figure drawn, not by the page: evaluating it is the largest
// piece of main-thread work the page has, and a reader who has not yet reached a figure (lazy.js
// decides when one is near) should be able to type meanwhile.

import { label, language, t } from "./i18n.js";
import { offerNumbers } from "./numbers.js";

const PLOTLY_URL = "/vendor/plotly.min.js";
const Plotly = () => window.Plotly;
let loading = null;

/** Plotly, loaded once on the first call (a classic script: it sets window.Plotly). */
export function loadPlotly() {
  loading ??= new Promise((resolve, reject) => {
    if (window.Plotly) return resolve(window.Plotly);
    const script = document.createElement("script");
    script.src = PLOTLY_URL;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => {
      loading = null; // the next figure tries again
      script.remove();
      reject(new Error(t("plot.no-library")));
    };
    document.head.append(script);
  });
  return loading;
}

/** A colour scale of evenly spaced stops, as Plotly takes it: [[0, first], ..., [1, last]]. */
const evenly = (colours) => colours.map((colour, i) => [i / (colours.length - 1), colour]);

/**
 * Colour-blind-safe sequential scale for attention weights (0..1): viridis rises in lightness from
 * end to end, so protan, deutan and tritan readers see the same order. Cividis is the scale of
 * signed values. Their high-contrast versions: inferno, from near black to pale yellow, rising in
 * lightness too; and cividis with its ends pushed to black and white. tests/app/test_colour_scales.py
 * reads these stops, simulates the three colour-vision deficiencies on them and checks the contrast
 * between their ends and between their quarters.
 */
export const WEIGHT_SCALE = evenly(["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58",
  "#b5de2b", "#fde725"]);
export const GATE_SCALE = evenly(["#00224e", "#123570", "#3b496c", "#575d6d", "#707173", "#8a8678", "#a59c74", "#c3b369",
  "#e1cc55", "#fee838"]);
const WEIGHT_SCALE_MORE = evenly(["#000004", "#1b0c41", "#4a0c6b", "#781c6d", "#a52c60", "#cf4446", "#ed6925", "#fb9b06",
  "#f7d13d", "#fcffa4"]);
const GATE_SCALE_MORE = evenly(["#000000", "#0b2350", "#3b496c", "#575d6d", "#707173", "#8a8678", "#a59c74", "#c3b369",
  "#f0de6a", "#ffffff"]);
/** Each scale a view names, and the scale drawn in its place at high contrast. */
const MORE = new Map([[WEIGHT_SCALE, WEIGHT_SCALE_MORE], [GATE_SCALE, GATE_SCALE_MORE]]);

/** Whether the page is at high contrast now (contrast.js sets it on <html>). */
export const highContrast = () => document.documentElement.dataset.contrast === "more";

const themes = new Map(); // "contrast name" -> the colour app.css gives --plot-<name>

/**
 * A figure's colour from the page's theme: app.css's `--plot-<name>` (text, grid, guide: a
 * reference line, ink, mark: the reader's choice, muted, paper).
 */
export function themed(name) {
  const id = `${highContrast()} ${name}`;
  if (!themes.has(id)) {
    themes.set(id, getComputedStyle(document.documentElement).getPropertyValue(`--plot-${name}`).trim());
  }
  return themes.get(id);
}

/** The Okabe-Ito colours by name, for a figure's own series (a model's follow MODEL_PALETTE). */
export const OKABE_ITO = { vermillion: "#D55E00", blue: "#0072B2", green: "#009E73" };

/**
 * Okabe-Ito colours, given to the models in the catalogue's order (catalog.js); the first two,
 * vermillion and blue, are the pair the gradient plot compares. Yellow and black come last: the
 * weakest on white, and the most like the text.
 */
export const MODEL_PALETTE = [OKABE_ITO.vermillion, OKABE_ITO.blue, OKABE_ITO.green, "#E69F00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"];
/** Marker symbols in the same order, so lines stay apart where colours are hard to tell. */
export const MODEL_MARKERS = ["circle", "diamond", "square", "triangle-up", "cross", "x", "star", "hexagon"];

/** The colour and marker of `name` by its place in `names` (the cells or contestants an answer lists). */
export function seriesStyle(names, name) {
  const i = Math.max(0, names.indexOf(name));
  return { colour: MODEL_PALETTE[i % MODEL_PALETTE.length], marker: MODEL_MARKERS[i % MODEL_MARKERS.length] };
}

const FONT = 'Inter, system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", "DejaVu Sans", Arial, sans-serif';

/** Escape a string so Plotly shows it literally instead of reading tags or entities in it. */
export function plotText(value) {
  return String(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A BPE piece as a reader wants to see it: the word-start marker dropped. */
export function showToken(piece) {
  const text = String(piece);
  if (text === "▁") return "␣";
  return text.startsWith("▁") ? text.slice(1) : text;
}

/**
 * An axis that keeps repeated tokens apart: positions 0..n-1 on the axis, tokens as tick labels.
 * (Category axes would merge two identical labels into one row.)
 */
export function tokenAxis(tokens, extra = {}, maxLabels = 40) {
  // long inputs: label every few tokens so the labels stay readable (hover still names each one)
  const step = Math.ceil(tokens.length / maxLabels);
  const shown = tokens.map((_, i) => i).filter((i) => i % step === 0);
  return {
    tickmode: "array",
    tickvals: shown,
    ticktext: shown.map((i) => plotText(showToken(tokens[i]))),
    showgrid: false,
    zeroline: false,
    ticks: "",
    automargin: true,
    tickfont: { size: tokens.length > 24 ? 9 : 12 },
    ...extra,
  };
}

/** customdata for a heatmap: [row token, column token] per cell, escaped for hover labels. */
function cellTokens(rows, cols) {
  const r = rows.map((tok) => plotText(showToken(tok)));
  const c = cols.map((tok) => plotText(showToken(tok)));
  return r.map((rowTok) => c.map((colTok) => [rowTok, colTok]));
}

export function baseLayout(extra = {}) {
  return {
    font: { family: FONT, size: 12, color: themed("text") },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    separators: t("plot.separators"), // decimal, then thousands: 0.83 / 0,83 in hover labels and ticks
    margin: { l: 56, r: 16, t: 10, b: 48 },
    autosize: true,
    hoverlabel: { font: { family: FONT, size: 13, color: themed("paper") }, bgcolor: themed("ink"), bordercolor: themed("ink") },
    modebar: { bgcolor: "rgba(255,255,255,0.9)", color: themed("guide"), activecolor: themed("mark") },
    ...extra,
  };
}

const SVG_ICON = {
  width: 1000,
  height: 1000,
  // a page with "</>" : vector download
  path:
    "M200 50h420l230 230v620a50 50 0 0 1-50 50H200a50 50 0 0 1-50-50V100a50 50 0 0 1 50-50zm380 70v200h200z" +
    "M370 520l-110 110 110 110 50-50-60-60 60-60zM630 520l-50 50 60 60-60 60 50 50 110-110z",
  transform: "",
};

/**
 * The figure as exported: on screen a shared HTML legend explains the colours (cheaper than a
 * colour bar per plot), so exported heatmaps get their colour bar back, with room for it.
 */
function exportFigure(gd) {
  const full = gd._fullLayout || {};
  const bar = (trace) => trace.type === "heatmap" && trace.meta && trace.meta.colorbarTitle;
  const withBar = gd.data.some(bar);
  const data = gd.data.map((trace) => (bar(trace) ? {
    ...trace,
    showscale: true,
    colorbar: { title: { text: trace.meta.colorbarTitle, side: "right" }, thickness: 12, outlinewidth: 0 },
  } : trace));
  const margin = { ...(gd.layout.margin || {}) };
  if (withBar) margin.r = (margin.r || 0) + 80;
  const layout = { ...gd.layout, margin, paper_bgcolor: themed("paper"), width: (full.width || 600) + (withBar ? 80 : 0),
    height: full.height || 400 };
  return { data, layout };
}

/** A modebar button that downloads the plot under the name draw() gave it (div.dataset.exportName). */
function exportButton(format, title, icon) {
  return {
    name: `download-${format}`,
    title,
    icon,
    click: (gd) => {
      const figure = exportFigure(gd);
      return Plotly().downloadImage(figure, {
        format, filename: gd.dataset.exportName || "plot", width: figure.layout.width, height: figure.layout.height,
        scale: format === "png" ? 2 : 1,
      });
    },
  };
}

const configs = new Map(); // language -> the config

/**
 * Modebar with a PNG (at 2x) and an SVG download button, both with the colour bar. The same
 * object for every plot and every redraw: Plotly.react compares the config it is given with the
 * last one, and the buttons' click functions of a fresh config never compare equal, so every
 * redraw would start the plot over from nothing.
 */
function plotConfig() {
  if (!configs.has(language())) configs.set(language(), {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: [
      "toImage", "sendChartToCloud", "select2d", "lasso2d", "autoScale2d", "zoomIn2d", "zoomOut2d",
    ],
    modeBarButtonsToAdd: [
      exportButton("png", t("plot.download-png"), Plotly().Icons.camera),
      exportButton("svg", t("plot.download-svg"), SVG_ICON),
    ],
  });
  return configs.get(language());
}

/** Plotly's modebar buttons are links without href: make them reachable and usable by keyboard. */
function keyboardModebar(div) {
  for (const button of div.querySelectorAll(".modebar-btn:not([tabindex])")) {
    button.setAttribute("tabindex", "0");
    button.setAttribute("role", "button");
    button.setAttribute("aria-label", button.getAttribute("data-title") || t("plot.tool"));
    button.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        button.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      }
    });
  }
}

/**
 * Draw or redraw (Plotly.react reuses the existing plot), removing any placeholder. `numbers`:
 * the JSON the API answered for what the figure shows, offered as "download the numbers".
 */
export function draw(div, data, layout, filename, numbers) {
  const ticket = (drawing.get(div) || 0) + 1; // a later draw of the same div wins
  drawing.set(div, ticket);
  const react = () => {
    if (drawing.get(div) !== ticket) return undefined;
    const empty = div.querySelector(":scope > .plot-empty");
    if (empty) empty.remove();
    div.dataset.state = "drawn";
    div.dataset.exportName = filename;
    offerNumbers(div, numbers, filename);
    drawnWith.set(div, [data, layout, filename, numbers]);
    const drawn = Plotly().react(div, ...asShown(data, layout), plotConfig());
    for (const [event, handler] of listeners.get(div) || []) {
      if (!div.dataset[`on${event}`]) div.on(event, handler);
      div.dataset[`on${event}`] = "1";
    }
    return drawn.then(() => {
      keyboardModebar(div);
      div.dispatchEvent(new CustomEvent("plot:drawn")); // twins.js: a heatmap takes the keys
    });
  };
  if (window.Plotly) return react();
  return loadPlotly().then(react, (error) => {
    if (drawing.get(div) === ticket) showEmpty(div, t("plot.cannot-draw", { why: error.message }));
  });
}

const drawing = new WeakMap(); // plot div -> the number of its latest draw or message
const drawnWith = new WeakMap(); // plot div -> the arguments of its latest draw

const REDUCED_MOTION = matchMedia("(prefers-reduced-motion: reduce)");

/**
 * The figure as the reader's settings show it: at high contrast, the high-contrast scales and black
 * text; with less motion asked for, no transition (Plotly.react animates only a layout that names one).
 */
function asShown(data, layout) {
  let shown = layout;
  if (REDUCED_MOTION.matches && "transition" in layout) {
    shown = { ...layout };
    delete shown.transition;
  }
  if (!highContrast()) return [data, shown];
  const traces = data.map((trace) => {
    const strong = { ...trace };
    if (MORE.has(trace.colorscale)) strong.colorscale = MORE.get(trace.colorscale);
    if (trace.line?.color) strong.line = { ...trace.line, color: darkened(trace.line.color) };
    if (typeof trace.marker?.color === "string") strong.marker = { ...trace.marker, color: darkened(trace.marker.color) };
    return strong;
  });
  return [traces, { ...shown, font: { ...shown.font, color: "#000000" } }];
}

/** WCAG's relative luminance of an sRGB channel list (0..1 each). */
const luminance = (rgb) => rgb.map((c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
  .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);

/**
 * `colour` (#rrggbb) darkened, its hue kept, until it stands 4.5:1 against the white page (WCAG's
 * bar for text, over the 3:1 asked of lines); darker colours and any other notation unchanged.
 * The light Okabe-Ito colours (yellow, orange, sky blue) are the ones it darkens.
 */
function darkened(colour) {
  const hex = /^#([0-9a-f]{6})$/i.exec(colour);
  if (!hex) return colour;
  const rgb = [0, 2, 4].map((i) => parseInt(hex[1].slice(i, i + 2), 16) / 255);
  const most = 1.05 / 4.5 - 0.05; // the largest luminance at 4.5:1 against white
  if (luminance(rgb) <= most) return colour;
  let [low, high] = [0, 1]; // the scale of every channel that meets it, by bisection in sRGB
  for (let k = 0; k < 20; k += 1) {
    const mid = (low + high) / 2;
    if (luminance(rgb.map((c) => c * mid)) <= most) low = mid;
    else high = mid;
  }
  return `#${rgb.map((c) => Math.floor(c * low * 255).toString(16).padStart(2, "0")).join("")}`;
}

/** Draw every figure again from what it last drew, at the page's contrast now: no new request. */
export function redrawAll() {
  const drawn = [...document.querySelectorAll(".plot[data-state='drawn']")].filter((div) => drawnWith.has(div));
  return Promise.all(drawn.map((div) => draw(div, ...drawnWith.get(div))));
}

const listeners = new WeakMap(); // plot div -> [[Plotly event, handler]], bound once it is a plot

/** Call `handler` on Plotly's `event` ("plotly_click"...) on `div`, once `div` is drawn; the first handler per event stays. */
export function onPlot(div, event, handler) {
  const list = listeners.get(div) || [];
  if (list.some(([e]) => e === event)) return;
  list.push([event, handler]);
  listeners.set(div, list);
  if (div.on) {
    div.on(event, handler);
    div.dataset[`on${event}`] = "1";
  }
}

/** Replace a plot with a short message (text only, never HTML). */
export function showEmpty(div, message) {
  drawing.set(div, (drawing.get(div) || 0) + 1); // a draw still waiting for Plotly is outdated
  if (window.Plotly && div.querySelector(".main-svg")) Plotly().purge(div);
  let empty = div.querySelector(":scope > .plot-empty");
  if (!empty) {
    empty = document.createElement("div");
    empty.className = "plot-empty";
    div.append(empty);
  }
  if (Array.isArray(message)) label(empty, ...message); // [key, values]: said again in another language
  else {
    delete empty.dataset.i18n;
    empty.textContent = message;
  }
  div.dataset.state = "empty";
  offerNumbers(div, undefined);
  div.dispatchEvent(new CustomEvent("plot:drawn")); // no heatmap any more: it leaves the tab order
}

/** A heatmap of one attention map on integer axes, with both tokens and the weight on hover. */
export function attentionTrace(map, extra = {}) {
  return {
    type: "heatmap",
    z: map.weights,
    x: map.cols.map((_, i) => i),
    y: map.rows.map((_, i) => i),
    customdata: cellTokens(map.rows, map.cols),
    hovertemplate: "<b>%{customdata[0]}</b> → %{customdata[1]}<br>weight %{z:.3f}<extra></extra>",
    colorscale: WEIGHT_SCALE,
    zmin: 0,
    zmax: 1,
    showscale: false,
    meta: { colorbarTitle: "weight" },
    xgap: map.cols.length > 40 ? 0 : 1,
    ygap: map.rows.length > 40 ? 0 : 1,
    ...extra,
  };
}

/** The axes of one alignment grid: output words (rows, top down) by source words (columns). */
export function alignmentLayout(map) {
  return baseLayout({
    margin: { l: 60, r: 12, t: 8, b: 60 },
    xaxis: tokenAxis(map.cols, { title: { text: t("map.source-axis"), standoff: 6 }, tickangle: map.cols.length > 8 ? -45 : 0 }),
    yaxis: tokenAxis(map.rows, { title: { text: t("map.output-axis"), standoff: 6 }, autorange: "reversed" }),
  });
}

const HIGHLIGHT = "#e8542f";
/** Which text each axis of a map of each kind reads, and the offset of its first token there. */
export const MAP_SIDES = { cross: { rows: ["target", 0], cols: ["source", 0] }, encoder: { rows: ["source", 0], cols: ["source", 0] },
  decoder: { rows: ["target", 0], cols: ["target", 1] } };

/** Outline the hovered token ({side, index}) in a map of `kind`: its row and its column. */
export function hoverShapes(kind, hover) {
  if (!hover || !MAP_SIDES[kind]) return [];
  const line = { color: HIGHLIGHT, width: 2 };
  const shapes = [];
  const [rowSide, rowOffset] = MAP_SIDES[kind].rows;
  const [colSide, colOffset] = MAP_SIDES[kind].cols;
  if (rowSide === hover.side) {
    const y = hover.index + rowOffset;
    shapes.push({ type: "rect", xref: "paper", x0: 0, x1: 1, y0: y - 0.5, y1: y + 0.5, line });
  }
  if (colSide === hover.side) {
    const x = hover.index + colOffset;
    shapes.push({ type: "rect", yref: "paper", y0: 0, y1: 1, x0: x - 0.5, x1: x + 0.5, line });
  }
  return shapes;
}

/**
 * Hovering a map's column names its token to the whole chapter: `tell({side, index})`, then
 * `tell(null)` when the pointer leaves. `kindOf(div)` says which kind of map the div shows now.
 * Bound on the first hover, once Plotly has drawn; not plotly_unhover: redrawing the outline under
 * the pointer unhovers it.
 */
export function shareColumnHover(div, kindOf, tell) {
  div.addEventListener("mouseenter", () => {
    if (div.dataset.hoverBound || !div.on) return;
    div.dataset.hoverBound = "1";
    div.on("plotly_hover", (event) => {
      const point = event.points && event.points[0];
      const sides = MAP_SIDES[kindOf(div)];
      if (!point || !sides) return;
      const [side, offset] = sides.cols;
      tell({ side, index: point.x - offset });
    });
  });
  div.addEventListener("mouseleave", () => tell(null));
}
