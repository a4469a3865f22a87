// The story's chapter views, in the order the page builds them and asks them about a new text: each
// chapter's record (app/chapters.py) names its views. Each is a module of static/js/chapters/ of one shape, which the request lifecycle (requests.js)
// drives without knowing one from another:
//
//   chapter   the data-chapter of the section it lives in
//   title     its name (the status line names a failed view by it, in the page's language: the
//             catalogue's message "view.<title, each run of other characters than a-z 0-9 a dash>")
//   figures   the ids of the elements it owns, in that section
//   asks      when it asks the server: "typed" (each new text, once its first panel is on or near
//             the screen: the per-model views fed by the compare stream, whose models the request at
//             each key carries while they are near), "text" (each new text, once its first panel
//             comes near the screen), "start" (once, as the page starts), "self" (only when it asks:
//             a button, a control, a shared value it watches)
//   state     optional: the URL keys it reads, with their defaults and checks (url-state.js says how)
//   mount(lab)                 builds its controls; `lab`: {root, part(id), catalog, page, ask(options),
//                              stop(), compared(model, signal), shown(answer, key)}, ask({key, lazy, pause})
//                              asking again, shown: its figures' sentences and tables said again for
//                              what it drew while an ask runs (a streamed run)
//   keys()                     what it asks about: [null], or the models it follows (keyed views)
//   models(key)                optional, "typed" views: the models key's ask takes from the compare
//                              stream (default: [key] for a keyed view, none for null)
//   panels(key)                the elements that show key's answer and say its failure; the first's
//                              nearness starts a "text" ask
//   wants(key)                 optional: false when a new text needs no ask (an answered question)
//   name(key)                  optional: its name in the status line (default: its title's message)
//   ask(text, signal, key)     the request -> Promise of the answer
//   draw(answer, key)          shows the answer
//   failure(error, key)        the failure in its words (null: its panels keep what they show)
//   describe(answer, key, plot)  what the Plotly figure `plot` draws of the answer, in one sentence
//                              (null: a panel of its own that another view draws)
//   rows(answer, key, plot)    the same, as a table: {caption, headers, rows}
//                              (twins.js shows both beside each figure the view draws, at its every
//                              drawing: the view's plot panels, and for a view of one answer the
//                              plots among its figures)
//
// Chapters never import each other: what two share goes through store.js.
import * as glance from "./glance.js";

/**
 * The views: the first screen's translation (glance.js) first, since it answers the first key, then
 * each chapter's, in the story's order, as app/chapters.py lists them (written on <body data-views>,
 * and preloaded by the page's head).
 */
export async function loadViews() {
  const names = (document.body.dataset.views || "").split(" ").filter(Boolean);
  return [glance, ...await Promise.all(names.map((name) => import(`./chapters/${name}.js`)))];
}
