// What a reader can share: the page's state in the query string. The page's own keys are here:
// lang (the page's language, en or fr: a shared link opens in the language it was copied in), text,
// model (the selected card), ch (the chapter in view, by its slug: app/chapters.py), tour (a teacher's
// chapters, in order, comma-separated) and ask (1: questions on, questions.js). A link that names
// chapters by the numbers they had before slugs reaches the page with their slugs (app/routes/pages.py). Every other key
// belongs to a chapter and is declared by the view that reads it, next to it, as its `state`
// (static/js/chapters/, glance.js):
//
//   state = {key: {read(q, ctx) -> {property: value, ...}, write(page) -> string or null}}
//
// `read` checks the key's value in the URLSearchParams `q` against ctx = {catalog, opening (the
// server's defaults, app/defaults.py: its answers are computed ahead)} and gives the page's
// properties it sets (a value the server's limits or catalogue do not allow falls back to its
// default); `write` gives the key's value for the URL from the page's properties (null: left out).

/** A count from 0 (a step, a row), or 0 when `value` is not one. */
export const count = (value) => (/^\d+$/.test(value || "") ? Number(value) : 0);

/** A count from 0, or null when the URL does not have `key`. */
export const countOrNull = (q, key) => (q.has(key) ? count(q.get(key)) : null);

/** A model the catalogue has, or `fallback`. */
export const knownModel = (q, key, catalog, fallback) => (catalog.info(q.get(key)) ? q.get(key) : fallback);

/** The model the story ends with: the first with heads to explore, else the last one. */
export function defaultModel(catalog) {
  const chosen = catalog.withHeads[0] || catalog.models[catalog.models.length - 1];
  return chosen ? chosen.name : null;
}

/** `tour`: chapters (slugs) that exist on the page, each once, in the link's order. */
const parseTour = (value, chapters) => [...new Set((value || "").split(",").map((s) => s.trim()).filter((s) => chapters.includes(s)))];

export class UrlState {
  /**
   * The state `search` (location.search) gives, checked against `catalog`; `lang`: the page's
   * language; `declared`: the views' `state` declarations (those without one are skipped).
   */
  constructor(search, catalog, lang, declared = []) {
    const q = new URLSearchParams(search);
    this.lang = lang;
    this.keys = Object.assign({}, ...declared.filter(Boolean));
    const opening = catalog.defaults;
    this.text = q.has("text") ? q.get("text") : opening.text;
    this.model = knownModel(q, "model", catalog, defaultModel(catalog));
    const chapters = [...document.querySelectorAll("section[data-chapter]")].map((s) => s.dataset.chapter);
    this.ch = chapters.includes(q.get("ch")) ? q.get("ch") : null;
    this.tour = parseTour(q.get("tour"), chapters);
    this.ask = q.get("ask") === "1";
    for (const key of Object.values(this.keys)) Object.assign(this, key.read(q, { catalog, opening }));
  }

  /** Change some keys and write them to the URL (in place: typing would flood the back button). */
  set(changes) {
    Object.assign(this, changes);
    this.write();
  }

  /**
   * Like `set`, with the URL written once the browser is idle (within half a second): a new text's
   * views draw first, and the address only needs to be right by the time someone copies it.
   */
  setSoon(changes) {
    Object.assign(this, changes);
    this.pending ??= requestIdleCallback(() => this.write(), { timeout: 500 });
  }

  write() {
    if (this.pending !== undefined) cancelIdleCallback(this.pending);
    this.pending = undefined;
    const q = new URLSearchParams({ lang: this.lang, text: this.text, model: this.model || "", ch: this.ch || "" });
    for (const [name, key] of Object.entries(this.keys)) {
      const value = key.write(this);
      if (value !== null) q.set(name, value);
    }
    if (this.tour.length) q.set("tour", this.tour.join(","));
    if (this.ask) q.set("ask", "1");
    history.replaceState(null, "", `${location.pathname}?${q}`);
  }
}
