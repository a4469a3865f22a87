// Chapter 4, the bottleneck: one card per model with its translation and its test BLEU, overall
// and for sentences as long as the one typed; and BLEU by length for every model as a chart.
import { MODEL_COLOURS, baseLayout, draw, showEmpty } from "./plots.js";

export const MODEL_NAMES = ["rnn", "lstm", "lstm-additive", "lstm-dot", "transformer"];
export const BUCKETS = ["1-5", "6-10", "11-15", "16+"];

const ABOUT = {
  rnn: "Plain recurrent net (Elman, 1990)",
  lstm: "LSTM encoder-decoder (2014)",
  "lstm-additive": "LSTM + additive attention",
  "lstm-dot": "LSTM + dot-product attention",
  transformer: "Transformer: heads, layers, no recurrence",
};
const GROUPS = [
  { title: "One vector for the whole sentence", names: ["rnn", "lstm"] },
  { title: "Free to look back at the source", names: ["lstm-additive", "lstm-dot", "transformer"] },
];

/** The evaluation bucket of a sentence, by its number of whitespace-separated words. */
export function bucketOf(text) {
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  if (words <= 5) return "1-5";
  if (words <= 10) return "6-10";
  if (words <= 15) return "11-15";
  return "16+";
}

const fmt = (bleu) => (typeof bleu === "number" && Number.isFinite(bleu) ? bleu.toFixed(1) : "–");

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function score(label) {
  const box = el("span", "score");
  const value = el("span", "score__value", "–");
  box.append(value, el("span", "score__label", label));
  return { box, value, label: box.lastChild };
}

export class TranslationCards {
  constructor(container, onSelect) {
    this.cards = new Map();
    this.info = new Map();
    this.bucket = "1-5";
    for (const group of GROUPS) {
      const box = el("div", "card-group");
      box.dataset.size = String(group.names.length);
      const list = el("div", "card-group__cards");
      box.append(el("p", "card-group__title", group.title), list);
      for (const name of group.names) list.append(this.card(name, onSelect));
      container.append(box);
    }
  }

  card(name, onSelect) {
    const card = el("button", "card");
    card.type = "button";
    card.dataset.model = name;
    card.setAttribute("aria-pressed", "false");
    const title = el("span", "card__name", name);
    title.style.setProperty("--model-colour", MODEL_COLOURS[name]);
    const what = el("span", "card__what", ABOUT[name]);
    const text = el("span", "card__text is-pending", "…");
    text.setAttribute("data-testid", `translation-${name}`);
    text.setAttribute("lang", "en");
    const scores = el("span", "card__scores");
    const overall = score("test BLEU");
    const bucket = score("BLEU, 1-5 words");
    scores.append(overall.box, bucket.box);
    card.append(title, what, text, scores);
    card.addEventListener("click", () => {
      if (!card.classList.contains("is-unavailable")) onSelect(name);
    });
    this.cards.set(name, { card, text, overall, bucket });
    return card;
  }

  /** Register what /api/models says about each loaded model; the others are marked unavailable. */
  setModels(models) {
    this.info = new Map(models.map((m) => [m.name, m]));
    for (const [name, parts] of this.cards) {
      const m = this.info.get(name);
      if (!m) {
        this.markUnavailable(name);
        continue;
      }
      parts.overall.value.textContent = fmt(m.metrics && m.metrics.bleu);
    }
    this.setBucket(this.bucket);
  }

  isAvailable(name) {
    return this.info.has(name);
  }

  setBucket(bucket) {
    this.bucket = bucket;
    for (const [name, parts] of this.cards) {
      parts.bucket.label.textContent = `BLEU, ${bucket.replace("-", "–")} words`;
      const rows = (this.info.get(name)?.metrics?.bleu_by_length) || [];
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

  setTranslation(name, translation) {
    const { text } = this.cards.get(name);
    text.className = "card__text";
    text.textContent = translation || "(empty translation)";
    this.busy(name, false);
  }

  setProblem(name, message) {
    const { text } = this.cards.get(name);
    text.className = "card__text is-missing";
    text.textContent = message;
    this.busy(name, false);
  }

  markUnavailable(name) {
    const { card } = this.cards.get(name);
    card.classList.add("is-unavailable");
    card.setAttribute("aria-disabled", "true");
    this.setProblem(name, "Not available yet: this model is still training or its checkpoint is missing.");
  }
}

// The traces of the last drawing, reused while the models and the selection stay the same: given
// the same data objects, Plotly.react redraws only what changed (the bucket's band, as the typed
// sentence grows), ~4 ms instead of ~14 ms for new but equal traces.
let lastTraces = { models: null, selected: null, data: null };

function bleuTraces(withMetrics, selected) {
  if (lastTraces.selected === selected && sameModels(lastTraces.models, withMetrics)) return lastTraces.data;
  const ordered = MODEL_NAMES.map((n) => withMetrics.find((m) => m.name === n)).filter(Boolean);
  const data = ordered.map((m) => {
    const byBucket = new Map(m.metrics.bleu_by_length.map((r) => [r.bucket, r]));
    const emphasis = !selected || selected === m.name;
    return {
      type: "scatter",
      mode: "lines+markers",
      name: m.name,
      x: BUCKETS.map((_, i) => i),
      y: BUCKETS.map((b) => (byBucket.has(b) ? byBucket.get(b).bleu : null)),
      customdata: BUCKETS.map((b) => (byBucket.has(b) ? byBucket.get(b).pairs : 0)),
      hovertemplate: `<b>${m.name}</b><br>%{y:.1f} BLEU on %{customdata} sentences<extra></extra>`,
      line: { color: MODEL_COLOURS[m.name], width: selected === m.name ? 4 : 2, dash: m.attention ? "solid" : "dot" },
      marker: { size: selected === m.name ? 9 : 6 },
      opacity: emphasis ? 1 : 0.45,
    };
  });
  lastTraces = { models: withMetrics, selected, data };
  return data;
}

// One object for every drawing: Plotly.react takes new tick arrays for new ticks and redraws the
// axes (~15 ms here instead of ~4 ms).
const BUCKET_AXIS = {
  tickmode: "array",
  tickvals: BUCKETS.map((_, i) => i),
  ticktext: BUCKETS.map((b) => b.replace("-", "–")),
  title: { text: "source sentence length (words)", standoff: 4 },
  range: [-0.5, BUCKETS.length - 0.5],
  showgrid: false,
  zeroline: false,
};

const sameModels = (a, b) => a !== null && a.length === b.length && a.every((m, i) => m === b[i]);

/** BLEU per length bucket, one line per loaded model, the typed sentence's bucket shaded. */
export function drawBleuByLength(div, models, bucket, selected) {
  const withMetrics = models.filter((m) => m.metrics && m.metrics.bleu_by_length && m.metrics.bleu_by_length.length);
  if (!withMetrics.length) {
    showEmpty(div, "No evaluation report yet: the scores appear once the models have been evaluated.");
    return;
  }
  const data = bleuTraces(withMetrics, selected);
  const at = BUCKETS.indexOf(bucket);
  const layout = baseLayout({
    margin: { l: 48, r: 12, t: 36, b: 48 },
    xaxis: BUCKET_AXIS,
    yaxis: { title: { text: "BLEU" }, rangemode: "tozero", gridcolor: "#eceef3", zeroline: false },
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom", font: { size: 12 } },
    shapes: at < 0 ? [] : [{
      type: "rect", xref: "x", yref: "paper", x0: at - 0.5, x1: at + 0.5, y0: 0, y1: 1,
      fillcolor: "rgba(43,68,201,0.08)", line: { width: 0 }, layer: "below",
    }],
  });
  draw(div, data, layout, "bleu-by-length");
}
