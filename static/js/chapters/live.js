// Train it yourself (the bottleneck chapter -> 5), its set-up: what the server offers (GET /api/train: tasks,
// contestants, defaults, limits) as controls kept in the URL (tt, tl, tc, tseed, tsteps), and the
// shipped reference sweep, accuracy against length for the task picked. The settings are shared
// (store `live`) with the run itself (live-run.js).
import * as api from "../api.js";
import { el } from "../dom.js";
import { pct } from "../facts.js";
import { label, listOf, t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, plotText, seriesStyle, showEmpty, themed } from "../plots.js";
import * as store from "../store.js";
import { countOrNull } from "../url-state.js";

export const chapter = "bottleneck";
/** GET /api/train: the "train it yourself" experiment's tasks, contestants, defaults, limits, sweep. */
export const fetchTrainInfo = (signal) => api.get("/api/train", signal);
export const title = "live experiment";
export const figures = ["live-controls", "live-task", "live-length", "live-steps", "live-seed", "live-contestants", "live-reference"];
export const asks = "start";

/** The URL's live run: `tt` (task), `tl` (length), `tc` (contestants, comma-separated), `tseed` and
 * `tsteps`; checked against GET /api/train's limits as it mounts. */
const counted = (key) => ({ read: (q) => ({ [key]: countOrNull(q, key) }), write: (p) => (p[key] === null ? null : String(p[key])) });
export const state = {
  tt: { read: (q) => ({ tt: q.get("tt") }), write: (p) => p.tt || null },
  tl: counted("tl"),
  tc: { read: (q) => ({ tc: (q.get("tc") || "").split(",").filter(Boolean) }), write: (p) => (p.tc.length ? p.tc.join(",") : null) },
  tseed: counted("tseed"),
  tsteps: counted("tsteps"),
};

let lab = null;
let info = null; // the answer drawn

export function mount(context) {
  lab = context;
}

export const keys = () => [null];
/** Without the set-up there is no run either: the failure is said on the run's figures too. */
export const panels = () => ["live-loss", "live-accuracy", "live-reference"].map(lab.part);
export const ask = (text, signal) => fetchTrainInfo(signal);
export const failure = (error) => t("bottleneck.live.failure", { why: api.explain(error) });

export function draw(answer) {
  info = answer;
  buildControls();
  publish(settings());
}

/** The settings the controls show (the server checks them again). */
function settings() {
  const { part } = lab;
  const contestants = [...part("live-contestants").querySelectorAll("input:checked")].map((b) => b.value);
  return { task: part("live-task").value, length: Number(part("live-length").value), contestants,
    steps: Number(part("live-steps").value), seed: Number(part("live-seed").value) };
}

/** A control changed: the settings into the URL, and on. */
function changed() {
  const s = settings();
  lab.page.set({ tt: s.task, tl: s.length, tc: s.contestants, tseed: s.seed, tsteps: s.steps });
  publish(s);
}

/** The reference for the settings, and the settings for the run. */
function publish(s) {
  const div = lab.part("live-reference");
  whenNear(div, () => drawSweep(div, info, s));
  store.set("live", { info, settings: s });
}

function buildControls() {
  const { part, page } = lab;
  const { defaults, limits, tasks, contestants } = info;
  const task = part("live-task");
  task.replaceChildren(...tasks.map((name) => label(new Option("", name), `bottleneck.task.${name}`)));
  task.value = tasks.includes(page.tt) ? page.tt : defaults.task;
  const length = part("live-length");
  Object.assign(length, { min: limits.min_length, max: limits.max_length });
  const asked = Number(page.tl);
  length.value = asked >= limits.min_length && asked <= limits.max_length ? asked : defaults.length;
  const steps = part("live-steps");
  Object.assign(steps, { min: 1, max: limits.max_steps });
  steps.value = page.tsteps >= 1 && page.tsteps <= limits.max_steps ? page.tsteps : defaults.steps;
  part("live-seed").value = Number.isInteger(page.tseed) ? page.tseed : defaults.seed;
  const chosen = page.tc?.length ? page.tc : defaults.contestants;
  part("live-contestants").replaceChildren(...contestants.map((c) => {
    const box = el("input");
    Object.assign(box, { type: "checkbox", value: c.name, checked: chosen.includes(c.name) });
    box.dataset.testid = `live-pick-${c.name}`;
    const pick = el("label", "live__pick");
    const kind = c.attention ? label(el("span", "live__kind"), "bottleneck.live.looks-back", { attention: c.attention }) : label(el("span", "live__kind"), "bottleneck.live.one-vector");
    pick.append(box, ` ${c.name} `, kind);
    return pick;
  }));
  const boxes = part("live-contestants").querySelectorAll("input");
  for (const input of [task, length, steps, part("live-seed"), ...boxes]) input.addEventListener("change", changed);
}

/** The shipped sweep's rows for `task`. */
const sweepOf = (answer, task) => (answer.reference?.rows || []).filter((r) => r.task === task);

/** The sweep is its figure; the run's curves, where it says its failure, are the run's to say (null). */
export function describe(answer, key, plot) {
  if (plot && plot.id !== "live-reference") return null;
  const { task, length } = settings();
  const near = sweepOf(answer, task).filter((r) => r.length === length);
  if (!near.length) return t("bottleneck.live.no-sweep-at", { task: t(`bottleneck.task.${task}`), length: String(length) });
  return t("bottleneck.live.describe", { task: t(`bottleneck.task.${task}`), length: String(length),
    each: listOf(near.map((r) => t("bottleneck.live.writes-back", { contestant: r.contestant, share: pct(r.accuracy) }))) });
}

export function rows(answer, key, plot) {
  if (plot && plot.id !== "live-reference") return null;
  const { task } = settings();
  return {
    caption: t("bottleneck.live.caption", { task: t(`bottleneck.task.${task}`) }),
    headers: [t("bottleneck.live.contestant"), t("bottleneck.live.symbols"), t("bottleneck.live.exact")],
    rows: sweepOf(answer, task).map((r) => [r.contestant, String(r.length), pct(r.accuracy)]),
  };
}

/** The shipped sweep: final accuracy against length for each contestant, the chosen length marked. */
function drawSweep(div, answer, { task, length }) {
  const sweep = answer.reference;
  const found = sweepOf(answer, task);
  if (!found.length) {
    showEmpty(div, t("bottleneck.live.no-sweep", { task }));
    return;
  }
  const names = [...new Set(found.map((r) => r.contestant))];
  const everyone = answer.contestants.map((c) => c.name);
  const traces = names.map((name) => {
    const own = found.filter((r) => r.contestant === name).sort((p, q) => p.length - q.length);
    const style = seriesStyle(everyone, name);
    return { type: "scatter", mode: "lines+markers", name: plotText(name), x: own.map((r) => r.length),
      y: own.map((r) => r.accuracy), line: { color: style.colour }, marker: { symbol: style.marker, size: 7 } };
  });
  drawPlot(div, traces, baseLayout({
    xaxis: { title: { text: t("bottleneck.live.x-axis", { task: t(`bottleneck.task.${task}`), steps: String(sweep.settings.steps) }) } },
    yaxis: { title: { text: t("bottleneck.live.exact") }, range: [0, 1.02], tickformat: ".0%" },
    shapes: [{ type: "line", x0: length, x1: length, y0: 0, y1: 1, yref: "paper", line: { dash: "dot", color: themed("guide") } }],
    legend: { orientation: "h", y: 1.15 },
  }), "live-reference", { settings: sweep.settings, rows: found });
}
