// The training chapter, training by gradients: every model's training log (GET /api/curves) on one chart,
// loss (train and validation) or validation BLEU against steps or minutes, the point each
// checkpoint kept starred (GET /api/models `kept`); the prose's numbers from the same answers.
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, plotText, showEmpty, themed } from "../plots.js";
import * as store from "../store.js";
import { knownModel } from "../url-state.js";

export const chapter = "training";
/** The training chapter: every model's training log, and (GET /api/models) where each checkpoint was kept. */
export const fetchCurves = (signal) => api.get("/api/curves", signal);
export const title = "training logs";
export const figures = ["curves-plot", "curve-metric", "curve-x", "curve-models", "training-story"];
export const asks = "start";

/** The URL's `curve` (the quantity), `x` (the axis) and `show` (one model; empty: all). */
export const state = {
  curve: { read: (q) => ({ curve: q.get("curve") === "bleu" ? "bleu" : "loss" }), write: (p) => p.curve },
  x: { read: (q) => ({ x: q.get("x") === "minutes" ? "minutes" : "step" }), write: (p) => p.x },
  show: { read: (q, { catalog }) => ({ show: knownModel(q, "show", catalog, "") }), write: (p) => p.show },
};

const X = { step: { title: "training.curves.step", of: (p) => p.step }, minutes: { title: "training.curves.minutes", of: (p) => p.seconds / 60 } };
let lab = null; // what mount was given
let curves = null; // the answer drawn

/** The controls (quantity, axis, model shown), from and to the URL state (curve, x, show). */
export function mount(context) {
  lab = context;
  const { part, page, catalog, root } = lab;
  const select = part("curve-models");
  select.append(...catalog.models.map((m) => new Option(m.name, m.name)));
  select.value = page.show;
  const radios = [...root.querySelectorAll("input[name=curve-metric], input[name=curve-x]")];
  for (const input of radios) input.checked = input.value === (input.name === "curve-x" ? page.x : page.curve);
  const changed = () => {
    const metric = radios.find((r) => r.name === "curve-metric" && r.checked).value;
    const x = radios.find((r) => r.name === "curve-x" && r.checked).value;
    page.set({ curve: metric, x, show: select.value });
    redraw();
  };
  for (const input of [...radios, select]) input.addEventListener("change", changed);
}

export const keys = () => [null];
export const panels = () => [lab.part("curves-plot")];
export const ask = (text, signal) => fetchCurves(signal);

export function draw(answer) {
  curves = answer;
  tell();
  redraw();
}

export const failure = (error) => t("training.curves.failure", { why: api.explain(error) });

function redraw() {
  if (curves) whenNear(lab.part("curves-plot"), plotCurves);
}

function plotCurves() {
  const div = lab.part("curves-plot");
  const { catalog, page: { curve, x, show } } = lab;
  const series = curve === "bleu" ? [["valid_bleu", t("training.curves.valid-bleu"), "solid"]]
    : [["train_loss", t("training.curves.train-loss"), "solid"], ["valid_loss", t("training.curves.valid-loss"), "dash"]];
  const data = [];
  for (const { model, points } of curves) {
    if (!points.length) continue;
    const visible = !show || show === model ? true : "legendonly";
    const common = { legendgroup: model, visible, line: { color: catalog.colour(model), width: 2 } };
    series.forEach(([key, label, dash], i) => data.push({
      ...common, type: "scatter", mode: "lines+markers", name: plotText(model), showlegend: i === 0,
      x: points.map(X[x].of), y: points.map((p) => p[key]), line: { ...common.line, dash },
      marker: { size: 5, symbol: catalog.marker(model) },
      hovertemplate: `${t("training.curves.hover", { model: plotText(model), series: label, axis: t(X[x].title), x: "%{x:.0f}", y: "%{y:.3f}" })}<extra></extra>`,
    }));
    const kept = catalog.info(model)?.kept;
    if (kept) {
      data.push({
        ...common, type: "scatter", mode: "markers", name: t("training.curves.kept-name", { model: plotText(model) }), showlegend: false,
        x: [X[x].of(kept)], y: [curve === "bleu" ? kept.valid_bleu : kept.valid_loss],
        marker: { symbol: "star", size: 16, color: catalog.colour(model), line: { color: themed("ink"), width: 1 } },
        hovertemplate: t("training.curves.kept-hover", { model: plotText(model), step: String(kept.step), epoch: String(kept.epoch),
          bleu: fmt(kept.valid_bleu), loss: fmt(kept.valid_loss) }),
      });
    }
  }
  if (!data.length) {
    showEmpty(div, t("training.curves.none"));
    return;
  }
  const layout = baseLayout({
    margin: { l: 56, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: t(X[x].title) }, gridcolor: themed("grid"), zeroline: false },
    yaxis: { title: { text: t(curve === "bleu" ? "training.curves.valid-bleu" : "training.curves.loss-axis") }, gridcolor: themed("grid"), zeroline: false, rangemode: "tozero" },
    legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
  });
  Object.assign(div.dataset, { curve, x, show });
  drawPlot(div, data, layout, `training-curves-${curve}-by-${x}`, curves);
}

/** The facts of the logs: the best and the lowest checkpoint by validation BLEU (empty when none records it). */
function kept(answer) {
  const runs = answer.map((c) => ({ ...c, kept: lab.catalog.info(c.model)?.kept }))
    .filter((c) => c.kept && Number.isFinite(c.kept.valid_bleu));
  const facts = { count: t("training.curves.count", { count: runs.length }) };
  if (!runs.length) return facts;
  const best = runs.reduce((a, b) => (b.kept.valid_bleu > a.kept.valid_bleu ? b : a));
  const worst = runs.reduce((a, b) => (b.kept.valid_bleu < a.kept.valid_bleu ? b : a));
  const first = best.points.length ? best.points[0].valid_loss : null;
  const last = best.kept.valid_loss;
  return Object.assign(facts, {
    best: best.model, "best-bleu": fmt(best.kept.valid_bleu), "best-steps": String(best.kept.step),
    "best-minutes": fmt(best.kept.seconds / 60), "best-first-loss": fmt(first), "best-kept-loss": fmt(last),
    "best-loss-direction": first === null ? "–" : t(last < first ? "training.curves.fell" : last > first ? "training.curves.rose" : "training.curves.level"),
    worst: worst.model, "worst-bleu": fmt(worst.kept.valid_bleu), "worst-minutes": fmt(worst.kept.seconds / 60),
  }, recipes(runs));
}

/** What differed in how they were trained (GET /api/models' `recipe`): learning rates, minutes, averaging. */
function recipes(runs) {
  const recipes = runs.map((c) => lab.catalog.info(c.model)?.recipe).filter(Boolean);
  if (!recipes.length) return {};
  const rates = recipes.map((r) => r.learning_rate);
  const minutes = runs.map((c) => c.kept.seconds / 60).filter(Number.isFinite);
  return {
    "rate-low": fmt(Math.min(...rates)), "rate-high": fmt(Math.max(...rates)),
    "minutes-low": fmt(Math.min(...minutes)), "minutes-high": fmt(Math.max(...minutes)),
    smoothing: fmt(Math.max(...recipes.map((r) => r.label_smoothing))),
    averaged: String(recipes.filter((r) => r.averaged > 1).length),
  };
}

/** The prose and the recap line, from the logs and where each checkpoint was kept. */
function tell() {
  const facts = kept(curves);
  store.headline(chapter, facts.best
    ? t("training.curves.headline", { best: facts.best, bleu: facts["best-bleu"], minutes: facts["best-minutes"], worst: facts.worst, worstBleu: facts["worst-bleu"] })
    : t("training.curves.headline-none"));
  fillStory(lab.part("training-story"), facts);
}

export function describe(answer) {
  const facts = kept(answer);
  if (!facts.best) return t("training.curves.describe-none", { count: answer.length });
  return t("training.curves.describe", {
    count: answer.length, best: facts.best, bleu: facts["best-bleu"], steps: facts["best-steps"], minutes: facts["best-minutes"],
    direction: facts["best-loss-direction"], first: facts["best-first-loss"], kept: facts["best-kept-loss"],
    worst: facts.worst, worstBleu: facts["worst-bleu"],
  });
}

export function rows(answer) {
  return {
    caption: t("training.curves.caption"),
    headers: [t("header.model"), t("header.step"), t("header.minutes"), t("training.curves.train-loss"), t("training.curves.valid-loss"), t("training.curves.valid-bleu")],
    rows: answer.flatMap(({ model, points }) => points.map((p) =>
      [model, String(p.step), fmt(p.seconds / 60), fmt(p.train_loss), fmt(p.valid_loss), fmt(p.valid_bleu)])),
  };
}
