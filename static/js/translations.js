// Chapter 4, the bottleneck: one card per model with its translation and its test BLEU, overall
// and for sentences as long as the one typed. The cards are grouped by whether the decoder may
// look back at the source (cross-attention); models that did not load say why.
import { el, partsOf } from "./dom.js";

const GROUPS = [
  { title: "One vector for the whole sentence", has: (m) => !m.cross_attention },
  { title: "Free to look back at the source", has: (m) => m.cross_attention },
];

const fmt = (bleu) => (typeof bleu === "number" && Number.isFinite(bleu) ? bleu.toFixed(1) : "–");

function score(label) {
  const box = el("span", "score");
  const value = el("span", "score__value", "–");
  box.append(value, el("span", "score__label", label));
  return { box, value, label: box.lastChild };
}

export class TranslationCards {
  /** `root`: chapter 4's section, whose #cards gets a card per model of `catalog`;
   * `onChange({ model })` when a reader picks one. */
  constructor(root, { catalog, onChange }) {
    const container = partsOf(root)("cards");
    const onSelect = (model) => onChange({ model });
    this.cards = new Map();
    this.catalog = catalog;
    const unavailable = Object.entries(catalog.unavailable);
    for (const { title, has } of GROUPS) {
      const cards = catalog.models.filter(has).map((m) => this.card(m.name, m.summary, onSelect));
      if (cards.length) container.append(group(title, cards));
    }
    if (unavailable.length) {
      const cards = unavailable.map(([name, reason]) => this.unavailableCard(name, reason));
      container.append(group("Not available", cards));
    }
  }

  card(name, summary, onSelect) {
    const card = el("button", "card");
    card.type = "button";
    card.dataset.model = name;
    card.setAttribute("aria-pressed", "false");
    const title = el("span", "card__name", name);
    title.style.setProperty("--model-colour", this.catalog.colour(name));
    const text = el("span", "card__text is-pending", "…");
    text.setAttribute("data-testid", `translation-${name}`);
    text.setAttribute("lang", "en");
    const scores = el("span", "card__scores");
    const overall = score("test BLEU");
    const bucket = score("BLEU, 1-5 words");
    overall.value.textContent = fmt(this.catalog.info(name)?.metrics?.bleu);
    scores.append(overall.box, bucket.box);
    card.append(title, el("span", "card__what", summary), text, scores);
    card.addEventListener("click", () => {
      if (!card.classList.contains("is-unavailable")) onSelect(name);
    });
    this.cards.set(name, { card, text, bucket });
    return card;
  }

  unavailableCard(name, reason) {
    const card = this.card(name, "Not loaded", () => {});
    card.classList.add("is-unavailable");
    card.setAttribute("aria-disabled", "true");
    this.setProblem(name, `Not available: ${reason}`);
    return card;
  }

  /** The second score: BLEU on the test sentences of `bucket`'s length. */
  setBucket(bucket) {
    if (bucket === this.bucket) return; // typing within a bucket: nothing to rewrite (~3.5 ms a round)
    this.bucket = bucket;
    for (const [name, parts] of this.cards) {
      parts.bucket.label.textContent = `BLEU, ${bucket.replace("-", "–")} words`;
      const rows = this.catalog.info(name)?.metrics?.bleu_by_length || [];
      const row = rows.find((r) => r.bucket === bucket);
      parts.bucket.value.textContent = fmt(row && row.bleu);
    }
  }

  select(name) {
    for (const [model, parts] of this.cards) parts.card.setAttribute("aria-pressed", String(model === name));
  }

  busy(name, on) {
    this.cards.get(name).card.classList.toggle("is-busy", on);
  }

  /** A model's answer for the latest text. */
  showAnswer(name, answer) {
    const { text } = this.cards.get(name);
    text.className = "card__text";
    text.textContent = answer.translation || "(empty translation)";
    this.busy(name, false);
  }

  setProblem(name, message) {
    const { text } = this.cards.get(name);
    text.className = "card__text is-missing";
    text.textContent = message;
    this.busy(name, false);
  }
}

function group(title, cards) {
  const box = el("div", "card-group");
  box.style.setProperty("--size", String(cards.length));
  const list = el("div", "card-group__cards");
  list.append(...cards);
  box.append(el("p", "card-group__title", title), list);
  return box;
}
