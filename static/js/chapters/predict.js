// The prediction chapter, next-token prediction (POST /api/predict): per output step the model's k likeliest
// next pieces (a table; click one to force it, and the model continues from there), greedy against
// a beam of the reader's size (the final candidates and the beam tree, drawn with Plotly).
import * as api from "../api.js";
import { el } from "../dom.js";
import { fillStory, fmt } from "../facts.js";
import { t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, OKABE_ITO, plotText, showEmpty, showToken, themed } from "../plots.js";
import { couldNot } from "../requests.js";
import * as store from "../store.js";
import { knownModel } from "../url-state.js";

export const chapter = "prediction";
/** The prediction chapter: per step the top-k next pieces, a forced `prefix` of pieces, greedy or a beam (candidates, tree). */
export const fetchPredict = (text, model, prefix, topK, beamSize, signal) =>
  api.post("/api/predict", { text, model, prefix, top_k: topK, beam_size: beamSize }, signal);
export const title = "prediction";
export const figures = ["predict-tree", "predict-table", "predict-candidates", "predict-model", "predict-beam",
  "predict-beam-value", "predict-clear", "predict-story"];
export const asks = "text";

/** The URL's `pmodel` (the model), `beam` (the beam size) and `prefix` (forced pieces separated by spaces). */
export const state = {
  pmodel: { read: (q, { catalog }) => ({ pmodel: knownModel(q, "pmodel", catalog, null) }), write: (p) => p.pmodel || "" },
  beam: {
    read(q, { catalog }) {
      const beam = Number(q.get("beam"));
      return { beam: Number.isInteger(beam) && beam >= 1 && beam <= catalog.limits.max_beam_size ? beam : 1 };
    },
    write: (p) => String(p.beam),
  },
  prefix: { read: (q) => ({ prefix: (q.get("prefix") || "").split(" ").filter(Boolean) }), write: (p) => p.prefix.join(" ") },
};

const STATUS = { kept: OKABE_ITO.blue, finished: OKABE_ITO.green, dropped: "#B0B6C3", forced: OKABE_ITO.vermillion };
let lab = null;
let topK = 5; // the server's (GET /api/health), whose answer it computed ahead
let greedyAnswer = null; // the greedy search drawn: its table's pieces

/** The model, the beam and the forced prefix, from and to the URL (pmodel, beam, prefix); each change searches again. */
export function mount(context) {
  lab = context;
  const { part, page, catalog } = lab;
  topK = catalog.defaults.top_k;
  const select = part("predict-model");
  select.replaceChildren(...catalog.names.map((n) => new Option(n, n)));
  if (!catalog.info(page.pmodel)) page.set({ pmodel: (catalog.withHeads[0] || catalog.models[0]).name });
  select.value = page.pmodel;
  select.addEventListener("change", () => change({ pmodel: select.value, prefix: [] }));
  const beam = part("predict-beam");
  beam.max = String(catalog.limits.max_beam_size); // the server's bound (GET /api/health)
  beam.value = String(page.beam);
  part("predict-beam-value").textContent = String(page.beam);
  beam.addEventListener("input", () => {
    part("predict-beam-value").textContent = beam.value;
    change({ beam: Number(beam.value) });
  });
  part("predict-clear").addEventListener("click", () => change({ prefix: [] }));
  part("predict-table").addEventListener("click", (e) => {
    const cell = e.target.closest("button[data-step]");
    if (!cell || !greedyAnswer) return;
    const step = Number(cell.dataset.step);
    change({ prefix: [...greedyAnswer.target_tokens.slice(0, step), cell.dataset.token] });
  });
}

function change(state) {
  lab.page.set(state);
  lab.ask();
}

export const keys = () => [null];
export const panels = () => [lab.part("predict-tree")];

/** Both searches for `text` (greedy and the beam), asked together. */
export function ask(text, signal) {
  const { pmodel, prefix, beam } = lab.page;
  return Promise.all([1, beam].map((b) => fetchPredict(text, pmodel, prefix, topK, b, signal)));
}

export const failure = (error) => couldNot(t("prediction.predict.what"), error);

/** The story's facts of both searches. */
function facts([greedy, wide]) {
  const best = wide.candidates ? wide.candidates[0] : null;
  const first = greedy.steps[0];
  return {
    model: greedy.model, greedy: greedy.translation, "first-piece": first ? showToken(first.token) : "–",
    "first-probability": first ? fmt(first.probability) : "–", beam: String(wide.beam_size ?? lab.page.beam),
    best: best ? best.translation : greedy.translation, "best-score": best ? fmt(best.score) : "–",
    verdict: t(!best ? "prediction.predict.beam-one" : best.translation === greedy.translation ? "prediction.predict.same" : "prediction.predict.not-greedy"),
    prefix: greedy.steps.some((s) => s.forced) ? greedy.steps.filter((s) => s.forced).map((s) => showToken(s.token)).join(" ") : t("prediction.predict.none"),
  };
}

export function draw([greedy, wide]) {
  greedyAnswer = greedy;
  table(greedy);
  const said = facts([greedy, wide]);
  fillStory(lab.part("predict-story"), said);
  store.headline(chapter, t("prediction.predict.headline", { model: greedy.model, piece: greedy.steps[0] ? said["first-piece"] : "",
    probability: said["first-probability"], greedy: greedy.translation }));
  lab.part("predict-candidates").replaceChildren(...(wide.candidates || []).map((c) =>
    el("li", "", t("prediction.predict.candidate", { translation: c.translation, logProb: fmt(c.log_prob), score: fmt(c.score) }))));
  const tree = lab.part("predict-tree");
  if (wide.tree) whenNear(tree, () => drawTree(tree, wide));
  else showEmpty(tree, t("prediction.predict.greedy-tree"));
}

/** A candidate piece and its probability, as the buttons and the table write it. */
const said = (choice) => t("prediction.predict.token-probability", { token: showToken(choice.token), probability: fmt(choice.probability) });

function table(answer) {
  const made = answer.steps.map((step, s) => {
    const tr = el("tr", step.forced ? "predict-forced" : "");
    tr.append(el("th", "", stepName(s, step)));
    for (const choice of step.top) {
      const button = el("button", choice.token === step.token ? "predict-choice predict-choice--chosen" : "predict-choice",
        said(choice));
      button.type = "button";
      Object.assign(button.dataset, { step: String(s), token: choice.token });
      const td = el("td");
      td.append(button);
      tr.append(td);
    }
    return tr;
  });
  lab.part("predict-table").replaceChildren(...made);
  lab.part("predict-table").dataset.steps = String(made.length);
}

const stepName = (s, step) => (step.forced ? t("prediction.predict.forced-step", { step: String(s + 1) }) : String(s + 1));

export function describe(answer) {
  const said = facts(answer);
  return t("prediction.predict.describe", { model: said.model, piece: said["first-piece"], probability: said["first-probability"], greedy: said.greedy,
    prefix: said.prefix, beam: said.beam, best: said.best, score: said["best-score"], verdict: said.verdict });
}

export function rows([greedy]) {
  const k = Math.max(0, ...greedy.steps.map((s) => s.top.length));
  return {
    caption: t("prediction.predict.caption", { model: greedy.model }),
    headers: [t("header.step"), t("prediction.predict.chosen"), t("prediction.predict.probability"), ...Array.from({ length: k }, (_, i) => t("prediction.predict.choice", { n: String(i + 1) }))],
    rows: greedy.steps.map((step, s) => [stepName(s, step), showToken(step.token), fmt(step.probability),
      ...Array.from({ length: k }, (_, i) => (step.top[i] ? said(step.top[i]) : "–"))]),
  };
}

function drawTree(div, answer) {
  const x = [];
  const y = [];
  const colors = [];
  const labels = [];
  const edges = { x: [], y: [] };
  answer.tree.forEach((nodes, s) => nodes.forEach((n, i) => {
    x.push(s);
    y.push(i);
    colors.push(STATUS[n.status] || themed("muted"));
    labels.push(t("prediction.predict.node", { token: plotText(showToken(n.token)), status: t(`prediction.beam-status.${n.status}`), logProb: fmt(n.log_prob), score: fmt(n.score) }));
    if (n.parent !== null && n.parent !== undefined) edges.x.push(s - 1, s, null), edges.y.push(n.parent, i, null);
  }));
  const data = [
    { type: "scatter", mode: "lines", x: edges.x, y: edges.y, line: { color: "#c9ced8", width: 1 }, hoverinfo: "skip", showlegend: false },
    { type: "scatter", mode: "markers+text", x, y, text: answer.tree.flat().map((n) => plotText(showToken(n.token))),
      textposition: "middle right", marker: { color: colors, size: 10 }, customdata: labels,
      hovertemplate: "%{customdata}<extra></extra>", showlegend: false },
  ];
  div.dataset.nodes = String(x.length);
  drawPlot(div, data, baseLayout({ margin: { l: 40, r: 40, t: 8, b: 40 }, xaxis: { title: { text: t("header.step") }, dtick: 1, gridcolor: themed("grid") },
    yaxis: { autorange: "reversed", title: { text: t("prediction.predict.rank") }, showgrid: false } }), `${answer.model}-beam${answer.beam_size}-tree`, answer);
}
