// Room to think: the Transformer's feed-forward sub-layers and residual paths, each switched off in
// every layer (POST /api/translate's sublayers_off). The reader's sentence is translated live with
// each; the test-split BLEU of each comes from the shipped evaluation (GET /api/models' `sublayers`,
// models.evaluate --sublayers), and so does the chapter's line in the recap. The chapter's head says
// the model's own sizes (its width, its feed-forward layer's) before anything is asked.
import * as api from "../api.js";
import { el } from "../dom.js";
import { fillStory, fmt } from "../facts.js";
import { label, t } from "../i18n.js";
import * as store from "../store.js";
import { couldNot } from "../requests.js";

export const chapter = "room";
/** A greedy translation by the Transformer with some of its sub-layer switches off (the room chapter). */
export const fetchTranslateWith = (text, model, sublayersOff, signal) =>
  api.post("/api/translate", { text, model, sublayers_off: sublayersOff }, signal);
export const title = "room to think";
export const figures = ["sublayers-table", "sublayers-story", "sublayers-note"];
export const asks = "text";

const SWITCHES = [null, "feed_forward", "residual_attention", "residual_feed_forward"];
const NAMES = { none: "room.sublayers.none", feed_forward: "room.sublayers.feed_forward", residual_attention: "room.sublayers.residual_attention",
  residual_feed_forward: "room.sublayers.residual_feed_forward" };
let lab = null;
let model = null; // the Transformer's catalogue entry: its name and its shipped sub-layer scores

export function mount(context) {
  lab = context;
  model = lab.catalog.withHeads[0] || null;
  if (!model) return;
  label(lab.part("room-sizes"), "room.sizes", { model: model.name, width: model.width, inner: model.feed_forward });
  label(lab.part("sublayers-note"), "room.sublayers-note", { pairs: model.metrics?.pairs ?? "–" });
  headline();
  waiting();
  // words written before any answer are rewritten in the new language; an answer's redraw does its own
  addEventListener("lab:language", () => {
    if (lab.part("sublayers-table").querySelector("tr[data-waiting]")) waiting();
  });
}

/**
 * Before the first answer, the table and its story as the answer will show them, with "…" for the
 * translations: each row's name and shipped score are known already. Their height is then there
 * before anything is asked, and the answer does not push down what a reader looks at below them.
 */
function waiting() {
  fill(SWITCHES.map(() => ({ translation: "…" })));
  for (const tr of lab.part("sublayers-table").children) tr.dataset.waiting = "";
}

/** The shipped model's test score with switch `off` (null: none off), or null when not scored. */
const scoreOf = (off) => (model.sublayers || []).find((s) => s.off === off) || null;

/** The recap's line: the shipped evaluation, which holds for any sentence. */
function headline() {
  const [all, ff, residual] = [null, "feed_forward", "residual_attention"].map(scoreOf);
  if (!all || !ff || !residual) return;
  store.headline(chapter, t("room.headline", { model: model.name, all: fmt(all.bleu), ff: fmt(ff.bleu), residual: fmt(residual.bleu) }), true);
}

export const keys = () => [null];
export const panels = () => [lab.part("sublayers-table")];
export const wants = () => model !== null;
export const ask = (text, signal) => Promise.all(SWITCHES.map((off) =>
  fetchTranslateWith(text, model.name, off ? [off] : [], signal)));
export const failure = (error) => couldNot(t("room.sublayers.what"), error);

/** Per switch: its name, the live translation, and its shipped test BLEU (null when not scored). */
function lines(answers) {
  return SWITCHES.map((off, i) => ({ off, name: t(NAMES[off || "none"]), translation: answers[i].translation, score: scoreOf(off) }));
}

const bleu = (score) => (score ? t("room.sublayers.bleu", { bleu: fmt(score.bleu), low: fmt(score.bleu_low), high: fmt(score.bleu_high) }) : "–");

export function draw(answers) {
  headline(); // again, in the page's language now
  fill(answers);
}

/** The table's rows and the story's facts from `answers` (one per switch, each with its translation). */
function fill(answers) {
  const made = lines(answers);
  lab.part("sublayers-table").replaceChildren(...made.map((line) => {
    const tr = el("tr");
    tr.dataset.off = line.off || "none";
    const said = el("td", "", line.translation);
    said.lang = "en";
    tr.append(el("th", "", line.name), said, el("td", "", bleu(line.score)));
    return tr;
  }));
  const [all, ...off] = made;
  const least = off.reduce((best, line) => (line.score && (!best.score || line.score.bleu > best.score.bleu) ? line : best), off[0]);
  fillStory(lab.part("sublayers-story"), { model: model.name, shipped: all.score ? fmt(all.score.bleu) : "–",
    translation: all.translation, "best-off": least.name, "best-off-bleu": least.score ? fmt(least.score.bleu) : "–" });
}

export function describe(answers) {
  return t("room.sublayers.describe", { model: model.name, rows: lines(answers).map((l) => t("room.sublayers.row", { name: l.name, translation: l.translation, bleu: bleu(l.score) })).join(t("list.separator")) });
}

export function rows(answers) {
  return {
    caption: t("room.sublayers.caption", { model: model.name }),
    headers: [t("room.sublayers.switch"), t("room.sublayers.translation"), t("room.sublayers.test-bleu")],
    rows: lines(answers).map((l) => [l.name, l.translation, bleu(l.score)]),
  };
}
