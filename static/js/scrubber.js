// Watching attention being learned (chapters 5 and 9): a step slider over one model's training,
// from its seeded initialization through the stored snapshots to the shipped weights (GET
// /api/models: `snapshots`). At each step the typed sentence's translation and cross-attention
// map (POST /api/snapshots), how sharp its rows are, and the validation BLEU of that step.
import * as api from "./api.js";
import { el } from "./dom.js";
import { whenNear } from "./lazy.js";
import { alignmentLayout } from "./alignment.js";
import { attentionTrace, baseLayout, draw, showEmpty } from "./plots.js";
import { Latest } from "./requests.js";

const PLAY_MS = 1400; // a frame's time on screen while playing

/** Mean over the rows of each row's largest weight: 1/columns for a uniform fog, 1 for one-hot. */
export function sharpness(weights) {
  return weights.reduce((sum, row) => sum + Math.max(...row), 0) / Math.max(weights.length, 1);
}

export class Scrubber {
  /**
   * In the chapter's scrubber (its part in `root`, the chapter's section), for the first model of
   * `candidates` trained with snapshots; `page[key]` holds the step shown (a training step, kept
   * in the URL), `onChange({ [key]: step })` records a new one.
   */
  constructor(root, { page, onChange, candidates, key }) {
    Object.assign(this, { page, key, onChange });
    const container = root.querySelector('[data-part="scrubber"]');
    this.model = candidates.find((m) => m.snapshots && m.snapshots.length > 1) || null;
    this.latest = new Latest();
    this.text = "";
    if (!this.model) {
      const who = candidates.map((m) => m.name).join(", ") || "none is loaded";
      container.replaceChildren(el("p", "panel panel--note",
        `No model of this chapter was trained with snapshots on this server (${who}), so there is no training to replay.`));
      return;
    }
    this.timeline = this.model.snapshots;
    this.index = Math.max(0, this.timeline.findIndex((p) => p.step === page[key]));
    if (this.timeline[this.index].step !== page[key]) this.index = this.timeline.length - 1;
    this.build(container);
  }

  build(container) {
    const name = this.model.name;
    const last = this.timeline.length - 1;
    this.play = el("button", "button", "▶ Play");
    this.play.type = "button";
    this.play.dataset.testid = `scrub-play-${name}`;
    this.play.addEventListener("click", () => this.toggle());
    this.slider = el("input");
    Object.assign(this.slider, { type: "range", min: "0", max: String(last), step: "1", value: String(this.index) });
    this.slider.dataset.testid = `scrub-${name}`;
    this.slider.setAttribute("aria-label", `Training step of ${name}`);
    this.slider.addEventListener("input", () => this.go(Number(this.slider.value)));
    this.label = el("output", "toolbar__value");
    this.label.dataset.testid = `scrub-label-${name}`;
    this.head = el("select");
    this.head.dataset.testid = `scrub-head-${name}`;
    this.head.setAttribute("aria-label", "Which cross-attention map");
    for (let layer = this.model.layers - 1; layer >= 0; layer -= 1) {
      for (let head = 0; head < Math.max(this.model.heads, 1); head += 1) {
        const option = el("option", "", this.model.heads > 1 ? `layer ${layer + 1}, head ${head + 1}` : "alignment");
        option.value = `${layer}.${head}`;
        this.head.append(option);
      }
    }
    this.head.hidden = this.head.options.length < 2;
    this.head.addEventListener("change", () => this.redraw());
    const toolbar = el("div", "toolbar");
    const group = el("div", "toolbar__group toolbar__group--grow");
    group.append(this.play, this.slider, this.label, this.head);
    toolbar.append(group);
    this.story = el("p", "story");
    this.story.dataset.testid = `scrub-story-${name}`;
    this.story.setAttribute("aria-live", "polite");
    this.mapPlot = figure(`Cross-attention of ${name} at this step`, `scrub-map-${name}`, "plot plot--align");
    this.curvePlot = figure("Validation BLEU at each stored step", `scrub-curve-${name}`, "plot plot--small");
    this.curvePlot.dataset.waiting = "Reading the stored steps…";
    const pair = el("div", "pair");
    pair.append(this.mapPlot.parentElement, this.curvePlot.parentElement);
    container.replaceChildren(toolbar, this.story, pair);
    this.describe();
  }

  /** Ask for the text in the box when the figures are near; resolves to a failure line or null. */
  update(text) {
    if (!this.model) return Promise.resolve(null);
    this.text = text;
    return whenNear(this.mapPlot, () => this.ask(), () => this.ask().then(() => null)) ?? Promise.resolve(null);
  }

  go(index) {
    this.index = index;
    this.slider.value = String(index);
    this.onChange({ [this.key]: this.timeline[index].step });
    this.describe();
    return this.ask();
  }

  async ask() {
    const point = this.timeline[this.index];
    this.mapPlot.dataset.step = "";
    try {
      await this.latest.ask((signal) => api.snapshot(this.text, this.model.name, point.step, signal), (answer) => {
        this.answer = answer;
        this.redraw();
      });
      return null;
    } catch (error) {
      for (const div of [this.mapPlot, this.curvePlot]) showEmpty(div, `The training replay could not be shown (${api.explain(error)}).`);
      this.stop();
      return `training replay: ${api.explain(error)}`;
    }
  }

  redraw() {
    const answer = this.answer;
    if (!answer) return;
    const [layer, head] = this.head.value.split(".").map(Number);
    const map = answer.maps.find((m) => m.kind === "cross" && m.layer === layer && m.head === head);
    const point = answer.snapshot;
    if (!map || !map.rows.length) {
      showEmpty(this.mapPlot, `At step ${point.step} ${this.model.name} produced no translation to align.`);
    } else {
      draw(this.mapPlot, [attentionTrace(map)], alignmentLayout(map), `training-${this.model.name}-step-${point.step}`, answer);
    }
    this.mapPlot.dataset.step = String(point.step);
    this.describe(map);
    this.drawCurve();
  }

  /** The step's facts in words: all of them measured (this answer, the training log). */
  describe(map) {
    const point = this.timeline[this.index];
    const weights = { initialized: "the seeded initialization, rebuilt (nothing stored)", snapshot: `a snapshot stored in ${point.precision}`, shipped: "the shipped weights every other chapter uses" }[point.weights];
    const minutes = point.seconds == null ? "" : `, ${(point.seconds / 60).toFixed(1)} minutes of training`;
    this.label.textContent = `step ${point.step}`;
    let text = `Step ${point.step} of ${this.timeline[this.timeline.length - 1].step}${minutes}: ${weights}; validation BLEU ${fixed(point.valid_bleu, 1)}, loss ${fixed(point.valid_loss, 2)}.`;
    const answer = this.answer;
    if (map && answer && answer.snapshot.step === point.step) {
      const fog = 1 / map.cols.length;
      text += ` It translates your sentence as “${answer.translation}”. Each output word's largest weight averages ${sharpness(map.weights).toFixed(2)} (a uniform fog over these ${map.cols.length} source pieces: ${fog.toFixed(2)}; one source piece per word: 1).`;
    }
    this.story.textContent = text;
  }

  drawCurve() {
    const steps = this.timeline.map((p) => p.step);
    const bleu = this.timeline.map((p) => p.valid_bleu);
    const here = this.timeline[this.index];
    const layout = baseLayout({
      margin: { l: 48, r: 12, t: 8, b: 44 },
      xaxis: { title: { text: "training step" }, zeroline: false },
      yaxis: { title: { text: "validation BLEU" }, rangemode: "tozero" },
      showlegend: false,
    });
    draw(this.curvePlot, [
      { type: "scatter", mode: "lines+markers", x: steps, y: bleu, line: { color: "#667085" }, hovertemplate: "step %{x}<br>BLEU %{y:.1f}<extra></extra>" },
      { type: "scatter", mode: "markers", x: [here.step], y: [here.valid_bleu], marker: { size: 14, color: "#D55E00" }, hoverinfo: "skip" },
    ], layout, `training-${this.model.name}-bleu`, this.timeline);
  }

  toggle() {
    if (this.timer) return this.stop();
    this.play.textContent = "❚❚ Pause";
    const next = async () => {
      const index = this.index >= this.timeline.length - 1 ? 0 : this.index + 1;
      await this.go(index);
      if (!this.timer) return;
      if (index >= this.timeline.length - 1) return this.stop();
      this.timer = setTimeout(next, PLAY_MS);
    };
    this.timer = setTimeout(next, 0);
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.play.textContent = "▶ Play";
  }
}

function figure(title, testid, className) {
  const caption = el("figcaption", "panel__caption");
  caption.append(el("span", "panel__title", title));
  const div = el("div", className);
  div.dataset.testid = testid;
  div.setAttribute("role", "group");
  div.setAttribute("aria-label", title);
  el("figure", "panel").append(caption, div);
  return div;
}

const fixed = (value, digits) => (value == null ? "not measured" : Number(value).toFixed(digits));
