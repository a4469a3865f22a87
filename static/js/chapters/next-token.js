// The prediction chapter, the free labels of next-token prediction (POST /api/next-token): the model's own
// greedy translation of the reader's sentence, scored in one teacher-forced pass, one label per
// position, and the loss at each in nats (a bar per position). An English reference typed in the
// box is scored the same way and drawn beside it, and lives in the URL (`ref`) so a link shares it; a
// reference the server refuses is said in the box's status line in the page's words (from the 422's
// `type` and `ctx`: its `msg` is the server's English), and the model's own bars stay.
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { t } from "../i18n.js";
import { baseLayout, draw as drawPlot, OKABE_ITO, plotText, showToken, themed } from "../plots.js";
import { couldNot } from "../requests.js";

export const chapter = "prediction";
/** The prediction chapter's free labels: the loss at each position of the model's own translation, or of an English `reference`. */
export const fetchNextToken = (text, model, signal, reference = null) =>
  api.post("/api/next-token", { text, ...(model ? { model } : {}), ...(reference ? { reference } : {}) }, signal);
export const title = "free labels";
export const figures = ["labels-plot", "labels-story", "labels-reference", "labels-reference-status"];
export const asks = "text";

const OWN = OKABE_ITO.blue;
const REFERENCE = OKABE_ITO.vermillion; // the reader's reference
const PAUSE_MS = 300; // the box asks once typing pauses this long

/** The URL's `ref`: the reference in the box, as typed (left out when empty). */
export const state = { ref: { read: (q) => ({ ref: q.get("ref") ?? "" }), write: (p) => p.ref || null } };

let lab = null;

export function mount(context) {
  lab = context;
  const box = lab.part("labels-reference");
  box.value = lab.page.ref;
  box.addEventListener("input", () => {
    lab.page.setSoon({ ref: box.value }); // the address only: the box keeps the caret and the page stays put
    lab.ask({ lazy: true, pause: PAUSE_MS });
  });
}

export const keys = () => [null];
export const panels = () => [lab.part("labels-plot")];
export const failure = (error) => couldNot(t("prediction.labels.what"), error);

/** The model's own translation scored; with a reference in the box, that too (a refusal kept as its words). */
export async function ask(text, signal) {
  const typed = lab.part("labels-reference").value.trim();
  const own = await fetchNextToken(text, null, signal);
  if (!typed) return { own, typed };
  try {
    return { own, typed, reference: await fetchNextToken(text, null, signal, typed) };
  } catch (error) {
    if (error.status !== 422) throw error; // an abort, a lost server: the lifecycle's to say
    return { own, typed, refused: error };
  }
}

function facts(own) {
  const worst = own.losses.indexOf(Math.max(...own.losses));
  return { model: own.model, translation: own.translation, count: String(own.labels.length),
    mean: fmt(own.mean_loss), worst: showToken(own.labels[worst]), "worst-loss": fmt(own.losses[worst]) };
}

/** Why the server refused the reference, in the page's words: the 422 names the kind of problem. */
function refusal(error) {
  const detail = error instanceof api.ApiError && Array.isArray(error.body?.detail) ? error.body.detail : [];
  const problem = detail.find((d) => d.loc?.[1] === "reference");
  const ctx = problem && typeof problem.ctx === "object" ? problem.ctx : {};
  switch (problem?.type) {
    case "string_too_long": return t("prediction.labels.refused.characters", { max: String(ctx.max_length) });
    case "too_long": return t("prediction.labels.refused.pieces", { count: String(ctx.actual_length), max: String(ctx.max_length) });
    case "too_short": case "string_too_short": return t("prediction.labels.refused.empty");
    default: return t("prediction.labels.refused.other");
  }
}

/** What the status line under the box says. */
function status(answer) {
  if (answer.refused) return t("prediction.labels.reference-refused", { why: refusal(answer.refused) });
  if (!answer.reference) return t("prediction.labels.reference-hint");
  const { reference, own } = answer;
  return t("prediction.labels.reference-said", { reference: reference.translation, count: reference.labels.length,
    mean: fmt(reference.mean_loss), own: fmt(own.mean_loss) });
}

const positions = (scored) => scored.labels.map((piece, i) => `${i + 1}. ${plotText(showToken(piece))}`);

export function draw(answer) {
  const { own, reference } = answer;
  fillStory(lab.part("labels-story"), facts(own));
  const said = lab.part("labels-reference-status");
  said.textContent = status(answer);
  said.dataset.state = answer.refused ? "bad" : reference ? "scored" : "empty";
  const div = lab.part("labels-plot");
  const bar = (scored, color, axis = "") => ({ type: "bar", x: positions(scored), y: scored.losses, marker: { color },
    xaxis: `x${axis}`, yaxis: `y${axis}`, hovertemplate: t("prediction.labels.hover"), showlegend: false });
  const data = [bar(own, OWN)];
  const axes = {
    xaxis: { title: { text: t("prediction.labels.x-axis") }, type: "category" },
    yaxis: { title: { text: t("prediction.labels.y-axis") }, rangemode: "tozero", gridcolor: themed("grid") },
  };
  let annotations = [];
  if (reference) {
    data.push(bar(reference, REFERENCE, "2"));
    axes.xaxis.domain = [0, 0.47];
    axes.xaxis2 = { type: "category", domain: [0.53, 1], anchor: "y2", title: { text: t("prediction.labels.x-axis") } };
    axes.yaxis2 = { anchor: "x2", matches: "y", rangemode: "tozero", gridcolor: themed("grid") };
    const heading = (text, x) => ({ text: plotText(text), xref: "paper", yref: "paper", x, y: 1, yanchor: "bottom", showarrow: false, font: { size: 12 } });
    annotations = [heading(t("prediction.labels.own-title", { mean: fmt(own.mean_loss) }), 0.235),
      heading(t("prediction.labels.reference-title", { mean: fmt(reference.mean_loss) }), 0.765)];
  }
  div.dataset.labels = String(own.labels.length);
  div.dataset.reference = reference ? String(reference.labels.length) : "";
  drawPlot(div, data, baseLayout({ margin: { l: 56, r: 12, t: reference ? 26 : 10, b: 64 }, ...axes, annotations }),
    `${own.model}-labels`, answer);
}

export function describe(answer) {
  const said = facts(answer.own);
  const own = t("prediction.labels.describe", { model: said.model, translation: said.translation, count: String(answer.own.labels.length),
    mean: said.mean, worst: said.worst, loss: said["worst-loss"] });
  return answer.reference ? t("sentences.two", { first: own, second: status(answer) }) : own;
}

export function rows(answer) {
  const { own, reference } = answer;
  const lines = (scored, which) => scored.labels.map((piece, i) => [String(i + 1), which, showToken(piece), fmt(scored.losses[i])]);
  return {
    caption: t("prediction.labels.caption", { model: own.model, translation: own.translation }),
    headers: [t("prediction.labels.position"), t("prediction.labels.scored"), t("prediction.labels.label-word"), t("prediction.labels.y-axis")],
    rows: [...lines(own, own.translation), ...(reference ? lines(reference, reference.translation) : [])],
  };
}
