// The recap: one number per chapter (two for the attention chapter: its alignment and its one line,
// the second's place named by the row's `part`), in the rows the template writes from the list of
// chapters (app/chapters.py). Each chapter says its own headline (store `headline:<slug>`) as it measures; the numbers measured on the sentence that no chapter has said yet
// come in one request (POST /api/recap) when the recap comes near the screen. A chapter's own
// headline for the current text wins over the recap's row. While the questions are asked, the row of
// a chapter whose question is not answered yet says so instead of its answer (store `revealed`).
import * as api from "../api.js";
import { chapterNumber, el } from "../dom.js";
import { label, language, t } from "../i18n.js";
import * as store from "../store.js";

export const chapter = "point";
/** The recap chapter: the recap's rows measured on `text`, one request for them all. */
export const fetchRecap = (text, signal) => api.post("/api/recap", { text }, signal);
export const title = "recap";
export const figures = ["recap"];
export const asks = "text";

let lab = null;
const written = new Set(); // chapters whose view wrote their row for the current text
const lasting = new Set(); // chapters whose row holds for any text (a timing of this server)

/** Each row follows its chapter's headline; a new text makes the rows measured on the old one fair game. */
export function mount(context) {
  lab = context;
  for (const node of lab.part("recap").querySelectorAll("[data-recap]")) {
    const n = node.dataset.recap;
    store.watch(`headline:${n}`, ({ text, lasting: forAnyText }) => {
      written.add(n);
      if (forAnyText) lasting.add(n);
      node.textContent = text;
      node.removeAttribute("lang");
    });
  }
  store.watch("text", () => {
    written.clear();
    for (const n of lasting) written.add(n);
  });
  store.watch("revealed", seal);
}

/** A chapter whose question the reader has not answered keeps its answer out of the recap too. */
function seal({ hidden }) {
  for (const item of lab.part("recap").querySelectorAll("li")) {
    const n = item.querySelector("[data-recap]")?.dataset.recap;
    const sealed = hidden.has(n);
    for (const part of item.querySelectorAll(".recap__answer, .recap__fact")) part.hidden = sealed;
    let note = item.querySelector(".recap__sealed");
    if (sealed && !note) {
      note = label(el("span", "recap__sealed"), "point.recap.sealed", { chapter: chapterNumber(n) });
      item.append(note);
    }
    if (note) note.hidden = !sealed;
  }
}

export const keys = () => [null];
export const panels = () => [lab.part("recap")];
export const ask = (text, signal) => fetchRecap(text, signal);
/** No figure: a failed request leaves each row as it was (the status line names it). */
export const failure = () => null;

/** Where a row goes (`data-recap`): its chapter's slug, and the part's name for a chapter's second measurement. */
const place = (row) => (row.part ? `${row.chapter}-${row.part}` : row.chapter);

export function draw(answer) {
  for (const row of answer.rows) {
    const node = lab.part("recap").querySelector(`[data-recap="${place(row)}"]`);
    if (!node || written.has(place(row))) continue;
    node.textContent = said(row);
  }
}

/** The row in the page's language, as the server phrased it from the catalogue (English: `text`). */
const said = (row) => row.said?.[language()] ?? row.text;

export function describe(answer) {
  return t("point.recap.describe", { rows: answer.rows.map((row) => t("point.recap.row", { chapter: chapterNumber(row.chapter), text: said(row) })).join(t("list.separator")) });
}

export function rows(answer) {
  return {
    caption: t("point.recap.caption"),
    headers: [t("point.recap.chapter"), t("point.recap.measured")],
    rows: answer.rows.map((row) => [String(chapterNumber(row.chapter)), said(row)]),
  };
}

