// Chapter 1, training by gradients: every model's training log (GET /api/curves) on one chart,
// loss (train and validation) or validation BLEU against steps or minutes, the point each
// checkpoint kept starred (GET /api/models `kept`); the prose's numbers from the same answers.
import * as api from "./api.js";
import { partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { baseLayout, draw, plotText, showEmpty } from "./plots.js";
import { headline } from "./recap.js";
import { fillStory, fmt } from "./facts.js";

const X = { step: { title: "training step", of: (p) => p.step }, minutes: { title: "training minutes", of: (p) => p.seconds / 60 } };

export class TrainingView {
  /** `root`: chapter 1's section; `page`: the URL state (curve, x, show); `onChange(changes)` when a control changes. */
  constructor(root, { catalog, page, onChange }) {
    this.$ = partsOf(root);
    this.catalog = catalog;
    this.page = page;
    this.curves = null;
    const select = this.$("curve-models");
    select.append(...catalog.models.map((m) => new Option(m.name, m.name)));
    select.value = page.show;
    const radios = [...root.querySelectorAll("input[name=curve-metric], input[name=curve-x]")];
    for (const input of radios) input.checked = input.value === (input.name === "curve-x" ? page.x : page.curve);
    const changed = () => {
      const metric = radios.find((r) => r.name === "curve-metric" && r.checked).value;
      const x = radios.find((r) => r.name === "curve-x" && r.checked).value;
      onChange({ curve: metric, x, show: select.value });
      this.redraw();
    };
    for (const input of [...radios, select]) input.addEventListener("change", changed);
  }

  async load() {
    try {
      this.curves = await api.curves();
      this.tell();
      this.redraw();
    } catch (error) {
      showEmpty(this.$("curves-plot"), `The training logs could not be read (${api.explain(error)}).`);
    }
  }

  redraw() {
    if (this.curves) whenNear(this.$("curves-plot"), () => this.draw());
  }

  draw() {
    const div = this.$("curves-plot");
    const { curve, x, show } = this.page;
    const series = curve === "bleu" ? [["valid_bleu", "validation BLEU", "solid"]]
      : [["train_loss", "training loss", "solid"], ["valid_loss", "validation loss", "dash"]];
    const data = [];
    for (const { model, points } of this.curves) {
      if (!points.length) continue;
      const visible = !show || show === model ? true : "legendonly";
      const common = { legendgroup: model, visible, line: { color: this.catalog.colour(model), width: 2 } };
      series.forEach(([key, label, dash], i) => data.push({
        ...common, type: "scatter", mode: "lines+markers", name: plotText(model), showlegend: i === 0,
        x: points.map(X[x].of), y: points.map((p) => p[key]), line: { ...common.line, dash },
        marker: { size: 5, symbol: this.catalog.marker(model) },
        hovertemplate: `<b>${plotText(model)}</b> ${label}<br>${X[x].title} %{x:.0f}<br>%{y:.3f}<extra></extra>`,
      }));
      const kept = this.catalog.info(model)?.kept;
      if (kept) {
        data.push({
          ...common, type: "scatter", mode: "markers", name: `${plotText(model)} kept`, showlegend: false,
          x: [X[x].of(kept)], y: [curve === "bleu" ? kept.valid_bleu : kept.valid_loss],
          marker: { symbol: "star", size: 16, color: this.catalog.colour(model), line: { color: "#161b26", width: 1 } },
          hovertemplate: `<b>${plotText(model)}</b> kept here<br>step ${kept.step}, epoch ${kept.epoch}<br>validation BLEU ${kept.valid_bleu}, loss ${kept.valid_loss}<extra></extra>`,
        });
      }
    }
    if (!data.length) {
      showEmpty(div, "No model carries a training log.");
      return;
    }
    const layout = baseLayout({
      margin: { l: 56, r: 12, t: 10, b: 48 },
      xaxis: { title: { text: X[x].title }, gridcolor: "#eceef3", zeroline: false },
      yaxis: { title: { text: curve === "bleu" ? "validation BLEU" : "loss (cross-entropy per piece)" }, gridcolor: "#eceef3", zeroline: false, rangemode: "tozero" },
      legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
    });
    Object.assign(div.dataset, { curve, x, show });
    draw(div, data, layout, `training-curves-${curve}-by-${x}`, this.curves);
  }

  /** The prose and the recap line, from the logs and where each checkpoint was kept. */
  tell() {
    const kept = this.curves.map((c) => ({ ...c, kept: this.catalog.info(c.model)?.kept }))
      .filter((c) => c.kept && Number.isFinite(c.kept.valid_bleu));
    const facts = { count: `${kept.length} models` };
    if (kept.length) {
      const best = kept.reduce((a, b) => (b.kept.valid_bleu > a.kept.valid_bleu ? b : a));
      const worst = kept.reduce((a, b) => (b.kept.valid_bleu < a.kept.valid_bleu ? b : a));
      const first = best.points.length ? best.points[0].valid_loss : null;
      const last = best.kept.valid_loss;
      Object.assign(facts, {
        best: best.model, "best-bleu": fmt(best.kept.valid_bleu), "best-steps": String(best.kept.step),
        "best-minutes": fmt(best.kept.seconds / 60), "best-first-loss": fmt(first), "best-kept-loss": fmt(last),
        "best-loss-direction": first === null ? "–" : last < first ? "fell" : last > first ? "rose" : "stayed level",
        worst: worst.model, "worst-bleu": fmt(worst.kept.valid_bleu), "worst-minutes": fmt(worst.kept.seconds / 60),
      });
      headline(1, `${best.model} reached ${fmt(best.kept.valid_bleu)} validation BLEU in ${fmt(best.kept.seconds / 60)} minutes of training; ${worst.model}, ${fmt(worst.kept.valid_bleu)}.`);
    }
    if (!kept.length) headline(1, "no checkpoint records the point it kept.");
    fillStory(this.$("training-story"), facts);
  }
}
