// The bottleneck chapter, the bottleneck, as a chart: test BLEU by source length, one line per model, the
// typed sentence's length group shaded and the picked card's model (store `model`) emphasised. It
// asks the server nothing: the shipped evaluation comes with the catalogue.
import { tenths } from "../facts.js";
import { language, t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, plotText, showEmpty, themed } from "../plots.js";
import * as store from "../store.js";

export const chapter = "bottleneck";
export const title = "BLEU chart";
export const figures = ["bleu-plot"];
export const asks = "typed";

// One object for every drawing in a language: Plotly.react takes new tick arrays for new ticks and
// redraws the axes, the dearer part of a redraw.
const axes = new Map(); // language -> the x axis
function bucketAxis() {
  if (!axes.has(language())) {
    axes.set(language(), {
      tickmode: "array",
      tickvals: lab.catalog.buckets.map((_, i) => i),
      ticktext: lab.catalog.buckets.map((b) => b.replace("-", "–")),
      title: { text: t("bottleneck.bleu.x-axis"), standoff: 4 },
      range: [-0.5, lab.catalog.buckets.length - 0.5],
      showgrid: false,
      zeroline: false,
    });
  }
  return axes.get(language());
}

const hasInterval = (row) => row != null && row.bleu_low != null && row.bleu_high != null;
let lab = null;
let evaluated = []; // the models with a score per length group
let shown = ""; // the bucket and selection drawn last
// The traces of the last drawing, kept while the selection stays: given the same data objects,
// Plotly.react redraws only what changed (the bucket's band, as the typed sentence grows), where new
// but equal traces would be redrawn whole.
let traces = { selected: undefined, data: null };

export function mount(context) {
  lab = context;
  const div = lab.part("bleu-plot");
  evaluated = lab.catalog.models.filter((m) => m.metrics && m.metrics.bleu_by_length && m.metrics.bleu_by_length.length);
  if (!lab.catalog.models.length) showEmpty(div, ["bottleneck.bleu.no-model"]);
  else if (!evaluated.length) showEmpty(div, ["bottleneck.bleu.no-report"]);
  store.watch("model", () => lab.ask());
  // the recap's line needs no figure: written for each text, wherever the reader is
  store.watch("text", (text) => store.headline(chapter, headline(lab.catalog.bucketOf(text))));
}

export const keys = () => [null];
export const panels = () => [lab.part("bleu-plot")];
/** The sentence's length group and the picked model: all the chart needs. */
export const ask = (text) => Promise.resolve({ bucket: lab.catalog.bucketOf(text), selected: lab.page.model });
export const failure = () => t("bottleneck.bleu.failure");

/** Draw for the sentence's `bucket` with `selected` emphasised (and say the chapter's headline); nothing to do when neither changed. */
export function draw({ bucket, selected }) {
  store.headline(chapter, headline(bucket));
  const key = `${bucket}|${selected}`;
  if (key === shown || !evaluated.length) return;
  shown = key;
  const div = lab.part("bleu-plot");
  whenNear(div, () => plotBleu(div, bucket, selected));
}

/** In the bucket, the best BLEU without and with attention. */
function best(bucket) {
  const top = (has) => lab.catalog.models.filter(has).map((m) => {
    const row = (m.metrics?.bleu_by_length || []).find((r) => r.bucket === bucket);
    return row ? { name: m.name, bleu: row.bleu } : null;
  }).filter(Boolean).sort((a, b) => b.bleu - a.bleu)[0];
  return [top((m) => !m.cross_attention), top((m) => m.cross_attention)];
}

const sayBest = (b) => (b ? t("bottleneck.bleu.best", { model: b.name, bleu: tenths(b.bleu) }) : t("bottleneck.bleu.none-evaluated"));

function headline(bucket) {
  const [squeezed, looking] = best(bucket);
  return t("bottleneck.bleu.headline", { words: bucket.replace("-", "–"), squeezed: sayBest(squeezed), looking: sayBest(looking) });
}

export function describe({ bucket, selected }) {
  const [squeezed, looking] = best(bucket);
  return t("bottleneck.bleu.describe", {
    count: evaluated.length, selected: selected || t("bottleneck.bleu.no-model-picked"), words: bucket.replace("-", "–"),
    squeezed: sayBest(squeezed), looking: sayBest(looking),
  });
}

export function rows() {
  const cell = (row) => (!row ? "–" : hasInterval(row)
    ? t("bottleneck.bleu.with-interval", { bleu: tenths(row.bleu), low: tenths(row.bleu_low), high: tenths(row.bleu_high) }) : tenths(row.bleu));
  return {
    caption: t("bottleneck.bleu.caption"),
    headers: [t("header.model"), ...lab.catalog.buckets.map((b) => t("bottleneck.bleu.words", { words: b.replace("-", "–") }))],
    rows: evaluated.map((m) => {
      const byBucket = new Map(m.metrics.bleu_by_length.map((r) => [r.bucket, r]));
      return [m.name, ...lab.catalog.buckets.map((b) => cell(byBucket.get(b)))];
    }),
  };
}

function plotBleu(div, bucket, selected) {
  const at = lab.catalog.buckets.indexOf(bucket);
  const layout = baseLayout({
    margin: { l: 48, r: 12, t: 36, b: 48 },
    xaxis: bucketAxis(),
    yaxis: { title: { text: "BLEU" }, rangemode: "tozero", gridcolor: themed("grid"), zeroline: false },
    legend: { orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom", font: { size: 12 } },
    shapes: at < 0 ? [] : [{
      type: "rect", xref: "x", yref: "paper", x0: at - 0.5, x1: at + 0.5, y0: 0, y1: 1,
      fillcolor: "rgba(43,68,201,0.08)", line: { width: 0 }, layer: "below",
    }],
  });
  drawPlot(div, lines(selected), layout, "bleu-by-length", lab.catalog.models);
}

function lines(selected) {
  if (traces.selected === selected && traces.language === language()) return traces.data;
  const { catalog } = lab;
  const data = evaluated.map((m) => {
    const byBucket = new Map(m.metrics.bleu_by_length.map((r) => [r.bucket, r]));
    const groups = lab.catalog.buckets.map((b) => byBucket.get(b));
    const emphasis = !selected || selected === m.name;
    return {
      type: "scatter",
      mode: "lines+markers",
      name: plotText(m.name),
      x: lab.catalog.buckets.map((_, i) => i),
      y: groups.map((r) => (r ? r.bleu : null)),
      // the 95% bootstrap interval of each bucket's BLEU (models/evaluate.py): how far apart two
      // models must be before the bucket ranks them
      error_y: {
        type: "data", symmetric: false, visible: groups.some(hasInterval), thickness: 1.5, width: 4,
        array: groups.map((r) => (hasInterval(r) ? r.bleu_high - r.bleu : null)),
        arrayminus: groups.map((r) => (hasInterval(r) ? r.bleu - r.bleu_low : null)),
      },
      // each point's hover is one message: with its interval or without
      customdata: groups.map((r) => (!r ? "" : t(hasInterval(r) ? "bottleneck.bleu.hover-interval" : "bottleneck.bleu.hover", {
        model: plotText(m.name), bleu: tenths(r.bleu), count: r.pairs, low: tenths(r.bleu_low ?? 0), high: tenths(r.bleu_high ?? 0) }))),
      hovertemplate: "%{customdata}<extra></extra>",
      line: { color: catalog.colour(m.name), width: selected === m.name ? 4 : 2, dash: m.attention ? "solid" : "dot" },
      marker: { size: selected === m.name ? 9 : 6, symbol: catalog.marker(m.name) },
      opacity: emphasis ? 1 : 0.45,
    };
  });
  traces = { selected, data, language: language() };
  return data;
}
