// Chapter 4, the bottleneck, as a chart: test BLEU by source length, one line per model, the
// typed sentence's length group shaded.
import { partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { baseLayout, draw, plotText, showEmpty } from "./plots.js";
import { headline } from "./recap.js";

const BUCKETS = ["1-5", "6-10", "11-15", "16+"];

/** The evaluation bucket of a sentence, by its number of whitespace-separated words. */
export function bucketOf(text) {
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  if (words <= 5) return "1-5";
  if (words <= 10) return "6-10";
  if (words <= 15) return "11-15";
  return "16+";
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

const hasInterval = (row) => row != null && row.bleu_low != null && row.bleu_high != null;

export class BleuChart {
  /** `root`: chapter 4's section, whose #bleu-plot this draws. */
  constructor(root, { catalog }) {
    this.div = partsOf(root)("bleu-plot");
    this.catalog = catalog;
    this.evaluated = catalog.models.filter((m) => m.metrics && m.metrics.bleu_by_length && m.metrics.bleu_by_length.length);
    this.shown = ""; // the bucket and selection drawn last
    // The traces of the last drawing, kept while the selection stays: given the same data
    // objects, Plotly.react redraws only what changed (the bucket's band, as the typed sentence
    // grows), ~4 ms instead of ~14 ms for new but equal traces.
    this.traces = { selected: undefined, data: null };
    if (!catalog.models.length) showEmpty(div, "No model is loaded.");
    else if (!this.evaluated.length) {
      showEmpty(div, "No evaluation report yet: the scores appear once the models have been evaluated.");
    }
  }

  /** Draw for the sentence's `bucket` with `selected` emphasised (and say the chapter's headline); nothing to do when neither changed. */
  show(bucket, selected) {
    bottleneckHeadline(this.catalog, bucket);
    const key = `${bucket}|${selected}`;
    if (key === this.shown || !this.evaluated.length) return;
    this.shown = key;
    whenNear(this.div, () => this.draw(bucket, selected));
  }

  draw(bucket, selected) {
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
    draw(this.div, this.lines(selected), layout, "bleu-by-length", this.catalog.models);
  }

  lines(selected) {
    if (this.traces.selected === selected) return this.traces.data;
    const data = this.evaluated.map((m) => {
      const byBucket = new Map(m.metrics.bleu_by_length.map((r) => [r.bucket, r]));
      const rows = BUCKETS.map((b) => byBucket.get(b));
      const emphasis = !selected || selected === m.name;
      return {
        type: "scatter",
        mode: "lines+markers",
        name: plotText(m.name),
        x: BUCKETS.map((_, i) => i),
        y: rows.map((r) => (r ? r.bleu : null)),
        // the 95% bootstrap interval of each bucket's BLEU (models/evaluate.py): how far apart two
        // models must be before the bucket ranks them
        error_y: {
          type: "data", symmetric: false, visible: rows.some(hasInterval), thickness: 1.5, width: 4,
          array: rows.map((r) => (hasInterval(r) ? r.bleu_high - r.bleu : null)),
          arrayminus: rows.map((r) => (hasInterval(r) ? r.bleu - r.bleu_low : null)),
        },
        customdata: rows.map((r) => [r ? r.pairs : 0, hasInterval(r) ? `, 95% interval ${r.bleu_low.toFixed(1)}–${r.bleu_high.toFixed(1)}` : ""]),
        hovertemplate: `<b>${plotText(m.name)}</b><br>%{y:.1f} BLEU on %{customdata[0]} sentences%{customdata[1]}<extra></extra>`,
        line: { color: this.catalog.colour(m.name), width: selected === m.name ? 4 : 2, dash: m.attention ? "solid" : "dot" },
        marker: { size: selected === m.name ? 9 : 6, symbol: this.catalog.marker(m.name) },
        opacity: emphasis ? 1 : 0.45,
      };
    });
    this.traces = { selected, data };
    return data;
  }
}

/** Chapter 4's headline: in the typed sentence's length bucket, the best BLEU without and with attention. */
function bottleneckHeadline(catalog, bucket) {
  const best = (has) => catalog.models.filter(has).map((m) => {
    const row = (m.metrics?.bleu_by_length || []).find((r) => r.bucket === bucket);
    return row ? { name: m.name, bleu: row.bleu } : null;
  }).filter(Boolean).sort((a, b) => b.bleu - a.bleu)[0];
  const [squeezed, looking] = [best((m) => !m.cross_attention), best((m) => m.cross_attention)];
  const say = (b) => (b ? `${b.name} ${b.bleu.toFixed(1)}` : "none evaluated");
  headline(4, `on test sentences of ${bucket.replace("-", "–")} words, best BLEU with one vector: ${say(squeezed)}; looking back: ${say(looking)}.`);
}
