// The prose helpers every chapter shares: numbers as the page writes them, the word for how two
// compare, a story's sentences filled from the facts its view measured, and an attention map said
// in numbers (its sharpness, its rows as a table). A sentence whose slot is still empty stays hidden
// behind a placeholder line (app.css), so a slot is never left empty on purpose: a fact the answer
// lacks is written as "–".
import { decimal, figure, language, number, t } from "./i18n.js";
import { showToken } from "./plots.js";

/** Two significant digits, very small or large numbers in scientific form: the page's `figure`. */
export const fmt = (x) => figure(x);

/** One decimal, in the page's language (a BLEU score: 31.4, 31,4). */
export const tenths = (x) => decimal(x.toFixed(1));

/** A share as a whole percentage (83%, 83 % in French). */
export const pct = (x) => number(Math.round(100 * x) / 100, { style: "percent", maximumFractionDigits: 0 });

/** "more" / "less" / "as much": how a compares with b, in the page's words. */
export const compare = (a, b) => (a === null || b === null ? "–" : t(a > b ? "compare.more" : a < b ? "compare.less" : "compare.same"));

/**
 * Which hidden units a figure shows: the server's rule (`answer.rule`, the API's English) in
 * English, else the catalogue's `key` with the number of units shown.
 */
export const unitsRule = (answer, key) => (language() === "en" ? answer.rule : t(key, { count: answer.units.length }));

/** Write the facts into the elements marked data-fact="name" below `root` (as text). */
export function fillStory(root, facts) {
  for (const node of root.querySelectorAll("[data-fact]")) {
    const value = facts[node.dataset.fact];
    node.textContent = value === undefined ? "–" : value;
  }
}

/** Mean over the rows of each row's largest weight: 1/columns for a uniform fog, 1 for one-hot. */
export function sharpness(weights) {
  return weights.reduce((sum, row) => sum + Math.max(...row), 0) / Math.max(weights.length, 1);
}

/** An attention map as a table: one row per row token, one column per column token, the weights as the page writes them. */
export function mapTable(map, caption, corner = t("map.output-word")) {
  return {
    caption,
    headers: [corner, ...map.cols.map(showToken)],
    rows: map.weights.map((row, i) => [showToken(map.rows[i]), ...row.map(fmt)]),
  };
}

/** Each row's strongest column and its weight, as the brightest cell of each row: "“bread” looks at “pain”, 0.83; …". */
export function strongest(map) {
  return map.weights.map((row, i) => {
    const j = row.indexOf(Math.max(...row));
    return t("map.looks-at", { row: showToken(map.rows[i]), column: showToken(map.cols[j]), weight: fmt(row[j]) });
  }).join(t("list.separator"));
}
