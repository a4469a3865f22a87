// The bottleneck chapter, the bottleneck: one card per model with its translation (from the one compare stream,
// keyed by model) and its test BLEU, overall and for sentences as long as the one typed. The cards
// are grouped by whether the decoder may look back at the source (cross-attention); models that
// did not load say why. The card picked is the page's model (store `model`, the URL's `model`).
import { explain } from "../api.js";
import { el } from "../dom.js";
import { tenths } from "../facts.js";
import { label, t } from "../i18n.js";
import * as store from "../store.js";

export const chapter = "bottleneck";
export const title = "translations";
export const figures = ["cards"];
export const asks = "typed";

const GROUPS = [
  { title: "bottleneck.cards.one-vector", has: (m) => !m.cross_attention },
  { title: "bottleneck.cards.look-back", has: (m) => m.cross_attention },
];

const bleu = (value) => (typeof value === "number" && Number.isFinite(value) ? tenths(value) : "–");
const words = (bucket) => bucket.replace("-", "–");
let lab = null;
const cards = new Map(); // model -> {card, text, bucket}
let bucket = null; // the length group of the latest text

/** A card per model of the catalogue, in its group; the URL's model picked. */
export function mount(context) {
  lab = context;
  const container = lab.part("cards");
  for (const group of GROUPS) {
    const made = lab.catalog.models.filter(group.has).map((m) => card(m.name, m));
    if (made.length) container.append(groupOf(group.title, made));
  }
  const unavailable = Object.entries(lab.catalog.unavailable);
  if (unavailable.length) container.append(groupOf("bottleneck.cards.unavailable", unavailable.map(([name, reason]) => unavailableCard(name, reason))));
  store.watch("model", select);
  store.watch("text", (text) => setBucket(lab.catalog.bucketOf(text)));
  store.set("model", lab.page.model);
}

export const keys = () => lab.catalog.names;
export const panels = (name) => [cards.get(name).text];
export const ask = (text, signal, name) => lab.compared(name, signal);

/** Model `name`'s translation of the latest text. */
export function draw(answer, name) {
  const { text } = cards.get(name);
  text.className = "card__text";
  text.textContent = answer.translation || t("bottleneck.cards.empty");
}

export function failure(error) {
  return error.status === 404 ? t("failure.unavailable") : t("bottleneck.cards.no-answer", { why: explain(error) });
}

const scoreOf = (name, group) => (lab.catalog.info(name)?.metrics?.bleu_by_length || []).find((r) => r.bucket === group);

export function describe(answer, name) {
  const row = scoreOf(name, bucket);
  return t("bottleneck.cards.describe", {
    name, translation: answer.translation || "", overall: bleu(lab.catalog.info(name)?.metrics?.bleu),
    bucket: bleu(row && row.bleu), words: words(bucket || lab.catalog.buckets[0]),
  });
}

export function rows(answer, name) {
  const row = scoreOf(name, bucket);
  return {
    caption: t("bottleneck.cards.caption", { name }),
    headers: [t("header.model"), t("header.translation"), t("bottleneck.cards.test-bleu"), t("bottleneck.cards.bucket", { words: words(bucket || lab.catalog.buckets[0]) })],
    rows: [[name, answer.translation || t("bottleneck.cards.empty"), bleu(lab.catalog.info(name)?.metrics?.bleu), bleu(row && row.bleu)]],
  };
}

function score(key, values) {
  const box = el("span", "score");
  const value = el("span", "score__value", "–");
  box.append(value, label(el("span", "score__label"), key, values));
  return { box, value, label: box.lastChild };
}

function card(name, model) {
  const button = el("button", "card");
  button.type = "button";
  button.dataset.model = name;
  button.setAttribute("aria-pressed", "false");
  const title = el("span", "card__name", name);
  title.style.setProperty("--model-colour", lab.catalog.colour(name));
  const text = el("span", "card__text is-pending", "…");
  text.setAttribute("data-testid", `translation-${name}`);
  text.setAttribute("lang", "en");
  const scores = el("span", "card__scores");
  const overall = score("bottleneck.cards.test-bleu");
  const byLength = score("bottleneck.cards.bucket", { words: words(lab.catalog.buckets[0]) });
  overall.value.textContent = bleu(lab.catalog.info(name)?.metrics?.bleu);
  scores.append(overall.box, byLength.box);
  const what = el("span", "card__what");
  if (model) lab.catalog.summarize(what, model);
  else label(what, "bottleneck.cards.not-loaded");
  button.append(title, what, text, scores);
  button.addEventListener("click", () => {
    if (button.classList.contains("is-unavailable")) return;
    lab.page.set({ model: name });
    store.set("model", name);
  });
  cards.set(name, { card: button, text, bucket: byLength });
  return button;
}

function unavailableCard(name, reason) {
  const made = card(name, null);
  made.classList.add("is-unavailable");
  made.setAttribute("aria-disabled", "true");
  const { text } = cards.get(name);
  text.className = "card__text is-missing";
  text.removeAttribute("lang");
  label(text, "bottleneck.cards.not-available");
  // the reason is the API's own text, which stays English: marked as such, for the eye and the reader
  const why = el("span", "card__reason", reason);
  why.lang = "en";
  why.dataset.testid = `reason-${name}`;
  label(why, "bottleneck.cards.server-says", {}, "title");
  text.after(why);
  return made;
}

/** The second score: BLEU on the test sentences of `group`'s length. */
function setBucket(group) {
  if (group === bucket) return; // typing within a bucket: nothing to rewrite
  bucket = group;
  for (const [name, parts] of cards) {
    label(parts.bucket.label, "bottleneck.cards.bucket", { words: words(group) });
    const row = scoreOf(name, group);
    parts.bucket.value.textContent = bleu(row && row.bleu);
  }
}

function select(name) {
  for (const [model, parts] of cards) parts.card.setAttribute("aria-pressed", String(model === name));
}

function groupOf(heading, made) {
  const box = el("div", "card-group");
  box.style.setProperty("--size", String(made.length));
  const list = el("div", "card-group__cards");
  list.append(...made);
  box.append(label(el("p", "card-group__title"), heading), list);
  return box;
}
