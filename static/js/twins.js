// Every figure readable without seeing it, built once for all views from their shape (contents.js):
// each Plotly figure a view draws gets its own sentence (describe(answer, key, plot), tied to the
// figure by aria-describedby) and its own table twin (rows(answer, key, plot), behind a "Show the
// numbers" button, hidden until asked), the same numbers the figure shows with the page's rounding.
// Both are said again at each drawing of the figure, so a figure redrawn from the same answer (a
// head picked, a slider moved) is said as it is now. A heatmap takes focus and its cells are read
// one by one with the arrow keys ("row, column, value", in one polite live region); a figure of
// several heatmaps passes from one to the next with Page Down and Page Up; Escape leaves it for the
// control after it. Nothing here knows one chapter from another.
import { el } from "./dom.js";
import { fmt } from "./facts.js";
import { label, listOf, t, unlabel } from "./i18n.js";

const twins = new WeakMap(); // plot div -> {box, sentence, button, table, source, rows}
const cells = new WeakMap(); // plot div -> [heatmap, row, column] last read by keyboard
let made = 0; // ids for the sentences and tables

/** A region announced politely (made once, visually hidden): one per kind of message. */
export function liveRegion(id) {
  let node = document.getElementById(id);
  if (!node) {
    node = el("p", "visually-hidden");
    node.id = id;
    node.setAttribute("aria-live", "polite");
    document.body.append(node);
  }
  return node;
}

/**
 * The Plotly figures `view` draws for `key`: its plot panels and, for a view of one answer, the
 * plots among its own figures, or inside them (a figure it draws but says no failure on: a run's
 * curves, the maps it makes for each contestant of a run).
 */
export function plotsOf(view, key) {
  const inside = (node) => (!node || node.classList.contains("plot") ? [node] : [...node.querySelectorAll(".plot")]);
  const own = key === null ? view.figures.flatMap((id) => inside(document.getElementById(id))) : [];
  const found = [...view.panels(key), ...own].filter((node) => node && node.classList.contains("plot"));
  return [...new Set(found)];
}

/** Say `view`'s answer for `key` beside each figure it draws: a sentence and a table each, in step with the figure. */
export function showTwins(view, key, answer) {
  for (const div of plotsOf(view, key)) {
    if (view.describe(answer, key, div) === null) continue; // a panel it says failures on, drawn by another view
    const twin = twinOf(div);
    twin.source = { view, key, answer };
    say(div, twin);
  }
}

/** The figure as drawn now, in words and (if open) as a table; an empty figure says its own message. */
function say(div, twin) {
  const { view, key, answer } = twin.source;
  const drawn = div.dataset.state === "drawn";
  const sentence = drawn ? view.describe(answer, key, div) : null;
  twin.box.hidden = !sentence;
  twin.sentence.textContent = sentence || "";
  if (sentence) div.setAttribute("aria-describedby", twin.sentence.id);
  else div.removeAttribute("aria-describedby");
  let table = null; // rows are built only for an open table: most readers never open one
  twin.rows = () => (table ??= view.rows(answer, key, div));
  if (!twin.table.hidden) fill(twin);
}

/** The twin of `div`, made on its first draw after the plot (and its download button, if made). */
function twinOf(div) {
  if (twins.has(div)) return twins.get(div);
  made += 1;
  const box = el("div", "twin");
  const sentence = el("p", "twin__sentence visually-hidden");
  sentence.id = `twin-sentence-${made}`;
  const button = label(el("button", "numbers twin__toggle"), "twin.show");
  button.type = "button";
  const table = el("table", "twin__table");
  table.id = `twin-table-${made}`;
  table.hidden = true;
  table.tabIndex = 0; // a wide table scrolls sideways: the keyboard scrolls it once it has focus
  button.setAttribute("aria-expanded", "false");
  button.setAttribute("aria-controls", table.id);
  if (div.dataset.testid) button.dataset.testid = `twin-${div.dataset.testid}`;
  box.append(sentence, button, table);
  const after = div.nextElementSibling?.classList.contains("numbers") ? div.nextElementSibling : div;
  after.after(box);
  const twin = { box, sentence, button, table, source: null, rows: null };
  div.addEventListener("plot:drawn", () => {
    heatmapKeys(div);
    if (twin.source) say(div, twin);
  });
  button.addEventListener("click", () => toggle(twin));
  twins.set(div, twin);
  heatmapKeys(div);
  return twin;
}

function toggle(twin) {
  const { button, table } = twin;
  const open = button.getAttribute("aria-expanded") !== "true";
  button.setAttribute("aria-expanded", String(open));
  label(button, open ? "twin.hide" : "twin.show");
  if (open) fill(twin);
  table.hidden = !open;
}

/** The table, rebuilt from the answer drawn last (a table is small: no diffing). */
function fill(twin) {
  if (!twin.rows) return;
  const { caption, headers, rows } = twin.rows();
  const { table } = twin;
  const head = el("tr");
  headers.forEach((text) => {
    const th = el("th", "", text);
    th.scope = "col";
    head.append(th);
  });
  const body = el("tbody");
  for (const row of rows) {
    const tr = el("tr");
    row.forEach((text, i) => {
      const cell = el(i === 0 ? "th" : "td", "", text);
      if (i === 0) cell.scope = "row"; // the first column names the row
      tr.append(cell);
    });
    body.append(tr);
  }
  const thead = el("thead");
  thead.append(head);
  table.replaceChildren(el("caption", "", caption), thead, body);
}

/** The heatmaps drawn in `div`, in the order drawn. */
const heatmapsOf = (div) => (div.data || []).filter((trace) => trace.type === "heatmap" && Array.isArray(trace.z));

/** A heatmap takes focus and answers arrows; any other plot keeps its own role and leaves the tab order. */
function heatmapKeys(div) {
  const maps = heatmapsOf(div);
  if (!maps.length) {
    if (div.dataset.keys) {
      div.removeAttribute("tabindex");
      div.setAttribute("role", div.dataset.keys);
      unlabel(div, "aria-roledescription");
      delete div.dataset.keys;
    }
    return;
  }
  label(div, maps.length > 1 ? "twin.heatmaps" : "twin.heatmap", {}, "aria-roledescription");
  if (div.dataset.keys) return;
  div.dataset.keys = div.getAttribute("role") || "group";
  div.tabIndex = 0;
  div.setAttribute("role", "application");
  div.addEventListener("keydown", (event) => onKey(div, event));
}

const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
const PAGES = { PageDown: 1, PageUp: -1 };

function onKey(div, event) {
  if (event.target !== div) return; // the modebar's buttons keep their keys
  if (event.key === "Escape") {
    event.preventDefault();
    leave(div);
    return;
  }
  const maps = heatmapsOf(div);
  const move = MOVES[event.key];
  const page = PAGES[event.key];
  if ((!move && !page) || !maps.length) return;
  event.preventDefault();
  let [m, i, j] = cells.get(div) || [0, 0, -1];
  if (page) [m, i, j] = [Math.min(maps.length - 1, Math.max(0, m + page)), 0, -1];
  m = Math.min(m, maps.length - 1);
  const heat = maps[m];
  [i, j] = step(heat.z, i, j, move || [0, 1]);
  cells.set(div, [m, i, j]);
  const said = cellSaid(div, heat, i, j);
  liveRegion("cell-said").textContent = maps.length > 1 || page ? t("plot.hover-value", { label: mapName(heat, m), value: said }) : said;
  try { // the hover label marks the cell for the eye too; a plot without it is still read
    const subplot = `${heat.xaxis || "x"}${heat.yaxis || "y"}`;
    window.Plotly.Fx.hover(div, [{ curveNumber: div.data.indexOf(heat), pointNumber: [i, j] }], subplot);
  } catch (error) { /* not drawn yet */ }
}

/** One cell on from (i, j) in the direction `move`, over the empty cells between a mosaic's tiles; stays at the edge. */
function step(z, i, j, [di, dj]) {
  const rows = z.length;
  const cols = Math.max(...z.map((row) => row.length));
  const inside = (a, b) => a >= 0 && a < rows && b >= 0 && b < cols;
  let [a, b] = [Math.min(rows - 1, Math.max(0, i + di)), Math.min(cols - 1, Math.max(0, j + dj))];
  while (inside(a, b) && (z[a][b] === null || z[a][b] === undefined)) [a, b] = [a + di, b + dj];
  return inside(a, b) ? [a, b] : [Math.max(0, i), Math.max(0, j)];
}

/** A map's name: its trace's, else its place ("map 2 of 4"). */
function mapName(heat, m) {
  return heat.name ? plain(heat.name) : t("twin.map-number", { number: m + 1 });
}

/** Escape: out of the heatmap to the control that follows it (its download button), so Tab goes on from there, never back in. */
function leave(div) {
  try { window.Plotly.Fx.unhover(div); } catch (error) { /* nothing hovered */ }
  const next = [div.nextElementSibling, div.nextElementSibling?.nextElementSibling]
    .map((node) => node && (node.matches("button") ? node : node.querySelector("button")))
    .find((button) => button && button.offsetParent && !button.classList.contains("numbers--none"));
  const target = next || div.closest("figure") || div.parentElement;
  if (!next && !target.hasAttribute("tabindex")) target.tabIndex = -1;
  target.focus();
}

/** Plotly's label text, as plain text. */
const plain = (html) => String(html).replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

/**
 * "row, column, value": the tokens of the cell (the first two of its hover's data; parts before
 * them, if any, are named by the trace's meta.cellParts, "layer 2, head 1"), else its axes' tick labels.
 */
function cellSaid(div, heat, i, j) {
  const tokens = heat.customdata?.[i]?.[j];
  const value = heat.z[i][j];
  const number = typeof value === "number" ? fmt(value) : t("twin.no-value");
  if (Array.isArray(tokens) && tokens.length >= 2) {
    const named = heat.meta?.cellParts || [];
    const cell = t("twin.cell", { row: plain(tokens[named.length]), column: plain(tokens[named.length + 1]), value: number });
    const parts = named.map((part, k) => t("twin.cell-part", { part, value: plain(tokens[k]) }));
    return listOf([...parts, cell], { style: "narrow" });
  }
  const x = heat.x ? heat.x[j] : j;
  const y = heat.y ? heat.y[i] : i;
  return t("twin.cell", { row: tick(div, heat.yaxis, "y", y), column: tick(div, heat.xaxis, "x", x), value: number });
}

/** The tick label an axis shows for `value` (its own value when it names none). */
function tick(div, ref, letter, value) {
  const name = `${letter}axis${(ref || letter).slice(1)}`;
  const axis = (div.layout || {})[name] || {};
  const at = axis.tickvals ? axis.tickvals.indexOf(value) : -1;
  return plain(at >= 0 && axis.ticktext ? axis.ticktext[at] : value);
}
