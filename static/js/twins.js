// Every figure readable without seeing it, built once for all views from their shape (contents.js):
// after each draw, each plot panel of the view gets its sentence (describe, tied to the figure by
// aria-describedby) and its table twin (rows, behind a "Show the numbers" button, hidden until
// asked), the same numbers the figure shows with the page's rounding. A heatmap takes focus and its
// cells are read one by one with the arrow keys ("row, column, value", in one polite live region);
// Escape leaves it for the control after it. Nothing here knows one chapter from another.
import { el } from "./dom.js";
import { fmt } from "./facts.js";
import { label, t, unlabel } from "./i18n.js";

const twins = new WeakMap(); // plot div -> {sentence, button, table}
const cells = new WeakMap(); // plot div -> [row, column] last read by keyboard
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

/** Say `view`'s answer for `key` on each of its plot panels: sentence and table, in step with the figure. */
export function showTwins(view, key, answer) {
  const plots = view.panels(key).filter((panel) => panel && panel.classList.contains("plot"));
  if (!plots.length) return;
  const sentence = view.describe(answer, key);
  let table = null; // rows are built only for an open table: most readers never open one
  const rows = () => (table ??= view.rows(answer, key));
  for (const div of plots) {
    const twin = twinOf(div);
    twin.sentence.textContent = sentence;
    twin.rows = rows;
    if (!twin.table.hidden) fill(twin);
  }
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
  div.setAttribute("aria-describedby", sentence.id);
  div.addEventListener("plot:drawn", () => heatmapKeys(div));
  const twin = { sentence, button, table, rows: null };
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

/** The first heatmap drawn in `div`, or null. */
const heatmapOf = (div) => (div.data || []).find((trace) => trace.type === "heatmap" && Array.isArray(trace.z)) || null;

/** A heatmap takes focus and answers arrows; any other plot keeps its own role and leaves the tab order. */
function heatmapKeys(div) {
  const heat = heatmapOf(div);
  if (!heat) {
    if (div.dataset.keys) {
      div.removeAttribute("tabindex");
      div.setAttribute("role", div.dataset.keys);
      unlabel(div, "aria-roledescription");
      delete div.dataset.keys;
    }
    return;
  }
  if (div.dataset.keys) return;
  div.dataset.keys = div.getAttribute("role") || "group";
  div.tabIndex = 0;
  div.setAttribute("role", "application");
  label(div, "twin.heatmap", {}, "aria-roledescription");
  div.addEventListener("keydown", (event) => onKey(div, event));
}

const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

function onKey(div, event) {
  if (event.target !== div) return; // the modebar's buttons keep their keys
  if (event.key === "Escape") {
    event.preventDefault();
    leave(div);
    return;
  }
  const move = MOVES[event.key];
  const heat = heatmapOf(div);
  if (!move || !heat) return;
  event.preventDefault();
  const rows = heat.z.length;
  const cols = Math.max(...heat.z.map((row) => row.length));
  const [i0, j0] = cells.get(div) || [0, -1];
  const i = Math.min(rows - 1, Math.max(0, i0 + move[0]));
  const j = Math.min(cols - 1, Math.max(0, j0 + move[1]));
  cells.set(div, [i, j]);
  liveRegion("cell-said").textContent = cellSaid(div, heat, i, j);
  try { // the hover label marks the cell for the eye too; a plot without it is still read
    window.Plotly.Fx.hover(div, [{ curveNumber: div.data.indexOf(heat), pointNumber: [i, j] }]);
  } catch (error) { /* not drawn yet */ }
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

/** "row, column, value": the tokens of the cell (its hover's, else its axes' tick labels) and its value. */
function cellSaid(div, heat, i, j) {
  const tokens = heat.customdata?.[i]?.[j];
  const value = heat.z[i][j];
  const number = typeof value === "number" ? fmt(value) : t("twin.no-value");
  if (Array.isArray(tokens) && tokens.length >= 2) return `${plain(tokens[0])}, ${plain(tokens[1])}, ${number}`;
  const x = heat.x ? heat.x[j] : j;
  const y = heat.y ? heat.y[i] : i;
  return `${tick(div, heat.yaxis, "y", y)}, ${tick(div, heat.xaxis, "x", x)}, ${number}`;
}

/** The tick label an axis shows for `value` (its own value when it names none). */
function tick(div, ref, letter, value) {
  const name = `${letter}axis${(ref || letter).slice(1)}`;
  const axis = (div.layout || {})[name] || {};
  const at = axis.tickvals ? axis.tickvals.indexOf(value) : -1;
  return plain(at >= 0 && axis.ticktext ? axis.ticktext[at] : value);
}
