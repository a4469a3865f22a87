// Chapter 10, the free labels of next-token prediction (POST /api/next-token): the model's own
// greedy translation of the reader's sentence, scored in one teacher-forced pass, one label per
// position, and the loss at each in nats (a bar per position).
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { t } from "../i18n.js";
import { baseLayout, draw as drawPlot, OKABE_ITO, plotText, showToken, themed } from "../plots.js";
import { couldNot } from "../requests.js";

export const chapter = "10";
export const title = "free labels";
export const figures = ["labels-plot", "labels-story"];
export const asks = "text";

let lab = null;

export function mount(context) {
  lab = context;
}

export const keys = () => [null];
export const panels = () => [lab.part("labels-plot")];
export const ask = (text, signal) => api.nextToken(text, null, signal);
export const failure = (error) => couldNot(t("labels.what"), error);

function facts(answer) {
  const worst = answer.losses.indexOf(Math.max(...answer.losses));
  return { model: answer.model, translation: answer.translation, count: String(answer.labels.length),
    mean: fmt(answer.mean_loss), worst: showToken(answer.labels[worst]), "worst-loss": fmt(answer.losses[worst]) };
}

export function draw(answer) {
  fillStory(lab.part("labels-story"), facts(answer));
  const div = lab.part("labels-plot");
  const x = answer.labels.map((piece, i) => `${i + 1}. ${plotText(showToken(piece))}`);
  const data = [{ type: "bar", x, y: answer.losses, marker: { color: OKABE_ITO.blue },
    hovertemplate: t("labels.hover"), showlegend: false }];
  div.dataset.labels = String(answer.labels.length);
  drawPlot(div, data, baseLayout({ margin: { l: 56, r: 12, t: 10, b: 64 },
    xaxis: { title: { text: t("labels.x-axis") }, type: "category" },
    yaxis: { title: { text: t("labels.y-axis") }, rangemode: "tozero", gridcolor: themed("grid") } }),
  `${answer.model}-labels`, answer);
}

export function describe(answer) {
  const said = facts(answer);
  return t("labels.describe", { model: said.model, translation: said.translation, count: String(answer.labels.length),
    mean: said.mean, worst: said.worst, loss: said["worst-loss"] });
}

export function rows(answer) {
  return {
    caption: t("labels.caption", { model: answer.model, translation: answer.translation }),
    headers: [t("labels.position"), t("labels.label"), t("labels.y-axis")],
    rows: answer.labels.map((piece, i) => [String(i + 1), showToken(piece), fmt(answer.losses[i])]),
  };
}
