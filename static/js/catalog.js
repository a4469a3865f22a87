// What the server serves, read once at start: its limits (GET /api/health) and each loaded model's
// capabilities (GET /api/models). The page builds every view from these and names no model
// itself, so a new checkpoint folder shows up with no edit here.
import * as api from "./api.js";
import { has, label, number, t } from "./i18n.js";
import { MODEL_MARKERS, MODEL_PALETTE, themed } from "./plots.js";

class Catalog {
  constructor(health, models) {
    this.limits = health.limits;
    this.defaults = health.defaults; // what the page opens with: {text, length, seed, top_k}
    this.unavailable = health.unavailable || {}; // name -> why it did not load
    this.device = health.device;
    this.numerics = health.numerics; // {precision, layout}: what every figure was computed with
    this.lengthBuckets = health.length_buckets; // the evaluation's length groups (models/lengths.py), shortest first
    this.models = models; // the story's order, then any other model
    this.index = new Map(models.map((m, i) => [m.name, i]));
  }

  /** The names of the evaluation's length groups, shortest first ("1-5", ...). */
  get buckets() {
    return this.lengthBuckets.map((b) => b.bucket);
  }

  /** The length group of a sentence, by its number of whitespace-separated words (as models/lengths.py counts). */
  bucketOf(text) {
    const words = text.trim().split(/\s+/).filter(Boolean).length;
    const group = this.lengthBuckets.find((b) => words <= (b.max_words ?? Infinity));
    return (group || this.lengthBuckets[0]).bucket;
  }

  get names() {
    return this.models.map((m) => m.name);
  }

  info(name) {
    return this.models[this.index.get(name)];
  }

  /** A model's colour and marker follow its place in the catalogue (unknown names: grey). */
  colour(name) {
    const i = this.index.get(name);
    return i === undefined ? themed("muted") : MODEL_PALETTE[i % MODEL_PALETTE.length];
  }

  marker(name) {
    const i = this.index.get(name);
    return i === undefined ? "circle" : MODEL_MARKERS[i % MODEL_MARKERS.length];
  }

  /**
   * Write model `m`'s summary into `node`: the catalogue's words for a model of the story; for
   * another, a line phrased in the reader's language from what the API says of it (architecture,
   * attention layers, size), not the server's English blurb, so a language switch rewrites it too.
   */
  summarize(node, m) {
    if (has(`summary.${m.name}`)) return label(node, `summary.${m.name}`);
    const parameters = number(m.parameters, { notation: "compact", maximumSignificantDigits: 3 });
    if (!m.recurrent) return label(node, "summary.of.transformer", { count: m.layers, parameters });
    const cell = m.architecture.toUpperCase();
    return label(node, m.cross_attention ? "summary.of.recurrent-attention" : "summary.of.recurrent", { cell, parameters });
  }

  /** One sentence saying how the models run for this page: the device, the precision, the weights' order. */
  get numericsLine() {
    if (!this.numerics) return "";
    const { precision, layout } = this.numerics;
    const order = t(layout === "input-major" ? "numerics.order.input-major" : "numerics.order.checkpoint");
    const arithmetic = t(precision === "fp16-weights" ? "numerics.fp16-weights" : "numerics.fp32");
    return t("numerics.line", { device: this.device, arithmetic, order });
  }

  /** Recurrent models with attention: theirs is one alignment grid, output words x source words. */
  get aligning() {
    return this.models.filter((m) => m.recurrent && m.cross_attention);
  }

  /** Every kind of attention map some model returns, in the server's order (encoder, decoder, cross). */
  get kinds() {
    return [...new Set(this.models.flatMap((m) => m.attention_kinds))];
  }

  /** The plain recurrent net: recurrent, without gates or attention (the the gradients chapter question's subject). */
  get plainRecurrent() {
    return this.models.find((m) => m.recurrent && !m.gates && !m.cross_attention);
  }

  /** Models with self-attention in layers of heads. */
  get withHeads() {
    return this.models.filter((m) => m.attention_kinds.includes("encoder"));
  }
}

/** The catalogue, or null when the server cannot say (the error is passed to `onError`). */
export async function loadCatalog(onError) {
  try {
    const [health, models] = await Promise.all([api.health(), api.listModels()]);
    return new Catalog(health, models);
  } catch (error) {
    onError(error);
    return null;
  }
}
