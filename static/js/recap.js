// Chapter 11's recap: one number per chapter. The numbers that need no sentence (the shipped
// evaluation, the catalogue) are written as the page loads; those measured on the sentence come
// in one request (POST /api/recap) when the recap comes near the screen, and a chapter that
// measures its own headline on the sentence replaces its row.
import * as api from "./api.js";
import { partsOf } from "./dom.js";

const written = new Set(); // chapters whose view wrote their row for the current text
const lasting = new Set(); // chapters whose row holds for any text (a timing of this server)

/** Chapter `chapter`'s headline is now `text`; `forAnyText`: it does not depend on the sentence. */
export function headline(chapter, text, forAnyText = false) {
  written.add(String(chapter));
  if (forAnyText) lasting.add(String(chapter));
  const node = document.querySelector(`[data-recap="${chapter}"]`);
  if (node) node.textContent = text;
}

/** A new text: rows measured on the old one are no longer the chapters' word on it. */
export function newText() {
  written.clear();
  for (const chapter of lasting) written.add(chapter);
}

/** Chapter 11 as a chapter view: POST /api/recap when the list comes near, for the rows no chapter wrote. */
export class RecapView {
  /** `root`: chapter 11's section. */
  constructor(root) {
    this.list = partsOf(root)("recap");
    this.anchor = this.list; // its nearness starts the request
    this.plots = []; // no figure: a failed request leaves each row as it was
  }

  call(text, signal) {
    return api.recap(text, signal);
  }

  show(answer) {
    for (const row of answer.rows) {
      const node = this.list.querySelector(`[data-recap="${row.chapter}"]`);
      if (node && !written.has(String(row.chapter))) node.textContent = row.text;
    }
  }
}
