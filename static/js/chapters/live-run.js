// Train it yourself (the bottleneck chapter -> 5), the run: the reader trains the bottleneck and the LSTM that
// looks back on a task whose answer is known (POST /api/train, models/live.py, with the settings
// of live.js, store `live`), and watches the loss, the held-out accuracy and one probe's attention
// map as the streamed answer arrives. A finished run's curves stay, dotted, beside the next. The
// verdict is written from the run's own numbers. Each figure's sentence and table follow the stream
// (lab.shown), not only the run's end.
import * as api from "../api.js";
import { el } from "../dom.js";
import { fmt, mapTable, pct, strongest } from "../facts.js";
import { listOf, t } from "../i18n.js";
import { WEIGHT_SCALE, baseLayout, draw as drawPlot, plotText, seriesStyle, showEmpty } from "../plots.js";
import * as store from "../store.js";

export const chapter = "bottleneck";
/** POST /api/train: one live run; each streamed line (JSON text) goes to `onLine` as it arrives. */
export const fetchTrain = (settings, signal, onLine) => api.lines("/api/train", settings, signal, onLine);
export const title = "live run";
export const figures = ["live-start", "live-stop", "live-x", "live-status", "live-loss", "live-accuracy", "live-maps"];
export const asks = "self";

let lab = null;
let setup = null; // {info, settings}: what live.js offers and the reader chose
let runs = []; // {settings, lines: Map contestant -> [progress lines], finals: Map, maps: Map contestant -> line, summary, probe, error}
let running = false;
let stopped = false;
const maps = new Map(); // contestant -> its map div

export function mount(context) {
  lab = context;
  const { part } = lab;
  part("live-start").disabled = true; // until the set-up has arrived
  part("live-start").addEventListener("click", start);
  part("live-stop").addEventListener("click", () => {
    stopped = true;
    lab.stop();
  });
  part("live-x").addEventListener("change", drawCurves);
  showEmpty(part("live-loss"), ["bottleneck.run.press-train"]);
  showEmpty(part("live-accuracy"), ["bottleneck.run.accuracy-here"]);
  store.watch("live", (value) => {
    setup = value;
    part("live-start").disabled = running;
  });
}

export const keys = () => [null];
export const panels = () => [lab.part("live-status")];

/** The run of the latest start, its lines drawn as they stream in; resolves to the run. */
export async function ask(text, signal) {
  const run = runs[runs.length - 1];
  await fetchTrain(run.settings, signal, (line) => take(run, JSON.parse(line)));
  return run;
}

/** The run ended on its own (a Stop that came too late changes nothing). */
export function draw(run) {
  stopped = false;
  say(run.error ? t("bottleneck.run.stopped-early", { why: run.error }) : verdict(run));
}
export const failure = (error) => t("bottleneck.run.failure", { why: api.explain(error) });

async function start() {
  if (running || !setup) return;
  const settings = setup.settings;
  if (!settings.contestants.length) return say(t("bottleneck.run.pick-one"));
  if (runs.length) runs = [runs[runs.length - 1]]; // the last finished run stays beside
  runs.push({ settings, lines: new Map(), finals: new Map(), maps: new Map(), summary: null, error: null });
  busy(true);
  training(settings);
  prepareMaps(settings.contestants);
  stopped = false;
  await lab.ask();
  if (stopped) say(t("bottleneck.run.stopped", { verdict: verdict(runs[runs.length - 1], true) }));
  busy(false);
  drawCurves();
}

function take(run, line) {
  if (line.queued) return waiting(line.queued);
  if (line.settings) training(run.settings); // a run that waited in line has its slot now
  if (line.error) run.error = line.error;
  if (line.probe) run.probe = line.probe;
  if (line.summary) run.summary = line.summary;
  if (!line.contestant) return;
  if (line.done) run.finals.set(line.contestant, line);
  else {
    if (!run.lines.has(line.contestant)) run.lines.set(line.contestant, []);
    run.lines.get(line.contestant).push(line);
  }
  if (line.map) drawMap(run, line.contestant, line);
  drawCurves();
  lab.shown(run); // the sentences and tables in step with every streamed line
}

function training(settings) {
  say(t("bottleneck.run.training", { contestants: listOf(settings.contestants), task: t(`bottleneck.task.${settings.task}`), length: String(settings.length) }));
}

/** Another reader's run has the slot: this one's place in the server's line and its expected start. */
function waiting({ place, starts_in }) {
  say(t("bottleneck.run.queued", { place: String(place), seconds: String(starts_in) }));
}

function busy(on) {
  running = on;
  lab.part("live-start").disabled = on;
  lab.part("live-stop").disabled = !on;
  document.documentElement.dataset.liveRunning = on ? "true" : "";
}

function say(message) {
  delete lab.part("live-status").dataset.i18n; // no longer the template's words
  lab.part("live-status").textContent = message;
}

const contestants = () => setup.info.contestants.map((c) => c.name);

function prepareMaps(names) {
  const holder = lab.part("live-maps");
  holder.replaceChildren();
  maps.clear();
  for (const name of names) {
    const info = setup.info.contestants.find((c) => c.name === name);
    if (!info?.attention) continue;
    const figure = el("figure", "panel");
    const caption = el("figcaption", "panel__caption");
    caption.append(el("span", "panel__title", t("bottleneck.run.map-title", { name })));
    const div = el("div", "plot plot--small");
    div.dataset.testid = `live-map-${name}`;
    div.dataset.contestant = name;
    div.setAttribute("role", "group");
    div.setAttribute("aria-label", t("bottleneck.run.map-label", { name }));
    figure.append(caption, div);
    holder.append(figure);
    maps.set(name, div);
    showEmpty(div, ["bottleneck.run.map-waiting"]);
  }
}

/** Contestant `name`'s latest map of the run, on the probe: {rows: outputs, cols: source symbols, weights, step}; null before any. */
function probeMap(run, name) {
  const line = run.maps.get(name);
  if (!line || !run.probe) return null;
  // a symbol may come twice: its place tells them apart
  const place = (symbols) => symbols.map((s, i) => t("bottleneck.run.placed", { symbol: s, place: String(i + 1) }));
  return { rows: [...place(run.probe.target.map(String)), t("bottleneck.run.end")], cols: place(run.probe.source.map(String)), weights: line.map,
    step: line.step };
}

function drawMap(run, name, line) {
  const div = maps.get(name);
  if (!div || !run.probe) return;
  run.maps.set(name, line);
  const src = run.probe.source.map(String);
  const out = [...run.probe.target.map(String), t("bottleneck.run.end")];
  drawPlot(div, [{
    type: "heatmap", z: line.map, x: src.map((_, i) => i), y: out.map((_, i) => i), zmin: 0, zmax: 1,
    colorscale: WEIGHT_SCALE, showscale: false, xgap: 1, ygap: 1,
    customdata: out.map((o) => src.map((s) => [o, s])),
    hovertemplate: t("bottleneck.run.map-hover"),
  }], baseLayout({
    margin: { l: 44, r: 8, t: 28, b: 40 },
    title: { text: plotText(t("bottleneck.run.map-step", { step: line.step })), font: { size: 12 }, x: 0.02 },
    xaxis: { title: { text: t("bottleneck.run.source-symbol") }, tickvals: src.map((_, i) => i), ticktext: src },
    yaxis: { title: { text: t("bottleneck.run.output") }, tickvals: out.map((_, i) => i), ticktext: out, autorange: "reversed" },
  }), `live-map-${name}`, { step: line.step, source: run.probe.source, target: run.probe.target, weights: line.map });
}

function drawCurves() {
  if (!runs.length) return;
  const x = lab.part("live-x").value; // "step" or "seconds"
  const traces = (key) => runs.flatMap((run, r) => [...run.lines].map(([name, lines]) => {
    const style = seriesStyle(contestants(), name);
    const old = r < runs.length - 1;
    return {
      type: "scatter", mode: "lines+markers", name: plotText(old ? t("bottleneck.run.previous", { name }) : name),
      x: lines.map((l) => l[x]), y: lines.map((l) => l[key]),
      line: { color: style.colour, dash: old ? "dot" : "solid", width: old ? 1.5 : 2.5 },
      marker: { symbol: style.marker, size: 5 }, opacity: old ? 0.55 : 1,
    };
  }));
  const axis = { title: { text: t(x === "step" ? "training.curves.step" : "bottleneck.run.seconds-axis") } };
  drawPlot(lab.part("live-loss"), traces("loss"), baseLayout({ xaxis: axis, yaxis: { title: { text: t("bottleneck.run.loss") }, type: "log" },
    legend: { orientation: "h", y: 1.15 } }), "live-loss", numbers());
  drawPlot(lab.part("live-accuracy"), traces("accuracy"), baseLayout({ xaxis: axis,
    yaxis: { title: { text: t("bottleneck.live.exact") }, range: [0, 1.02], tickformat: ".0%" },
    legend: { orientation: "h", y: 1.15 } }), "live-accuracy", numbers());
}

function numbers() {
  return runs.map((run) => ({ settings: run.settings, progress: Object.fromEntries(run.lines),
    final: Object.fromEntries(run.finals), summary: run.summary }));
}

/** The run's verdict in words, from its own final numbers (`partial`: stopped by the reader). */
function verdict(run, partial = false) {
  const s = run.summary;
  if (partial) {
    const last = [...run.lines.values()].map((lines) => lines[lines.length - 1]);
    if (!last.length) return t("bottleneck.run.no-turn");
    return t("bottleneck.run.stood", { each: listOf(last.map((l) => t("bottleneck.run.stood-one", { contestant: l.contestant, share: pct(l.accuracy), step: String(l.step) }))) });
  }
  const finals = [...run.finals.values()];
  if (!finals.length) return "";
  const { task, length } = run.settings;
  const each = listOf(finals.map((f) => t("bottleneck.run.final-one", { contestant: f.contestant, share: pct(f.accuracy), step: String(f.step) })));
  const head = t(task === "reverse" ? "bottleneck.run.head-reverse" : "bottleneck.run.head-copy", { length: String(length), each });
  if (!s || !s.best_attention || !s.best_bottleneck) return head;
  const a = s.best_attention;
  const b = s.best_bottleneck;
  const gap = Math.round(100 * (a.accuracy - b.accuracy));
  const said = { head, a: a.contestant, b: b.contestant, count: gap, pa: pct(a.accuracy), pb: pct(b.accuracy) };
  if (gap >= 20) return t("bottleneck.run.beat", said);
  if (gap > 0) return t("bottleneck.run.ahead", said);
  return t("bottleneck.run.as-well", said);
}

/**
 * The accuracy plot: the run's verdict (while it runs, where each contestant stands); the loss plot:
 * where each contestant's loss went; a contestant's map: which source symbol each output looks at.
 */
export function describe(run, key, plot) {
  if (plot?.dataset.contestant) {
    const map = probeMap(run, plot.dataset.contestant);
    if (!map) return null;
    return t("bottleneck.live.map.sentence", { name: plot.dataset.contestant, step: String(map.step), looks: strongest(map) });
  }
  if (plot?.id === "live-loss") {
    const each = [...run.lines].filter(([, lines]) => lines.length).map(([name, lines]) =>
      t("bottleneck.run.loss-one", { name, first: fmt(lines[0].loss), last: fmt(lines.at(-1).loss), step: String(lines.at(-1).step) }));
    return t("bottleneck.run.loss-describe", { task: t(`bottleneck.task.${run.settings.task}`), length: String(run.settings.length),
      each: listOf(each) || t("bottleneck.run.no-turn-yet") });
  }
  return run.error ? t("bottleneck.run.stopped-early", { why: run.error }) : verdict(run, !run.finals.size);
}

export function rows(run, key, plot) {
  if (plot?.dataset.contestant) {
    const map = probeMap(run, plot.dataset.contestant);
    return mapTable(map, t("bottleneck.live.map.caption", { name: plot.dataset.contestant, step: String(map.step) }), t("bottleneck.live.map.corner"));
  }
  const loss = plot?.id === "live-loss";
  const accuracy = plot?.id === "live-accuracy";
  return {
    caption: t("bottleneck.run.caption", { task: t(`bottleneck.task.${run.settings.task}`), length: String(run.settings.length) }),
    headers: [t("bottleneck.live.contestant"), t("header.step"), t("gradients.lag.seconds"), ...(accuracy ? [] : [t("bottleneck.run.loss")]), ...(loss ? [] : [t("bottleneck.live.exact")])],
    rows: [...run.lines].flatMap(([name, lines]) => lines.map((l) => [name, String(l.step), fmt(l.seconds),
      ...(accuracy ? [] : [fmt(l.loss)]), ...(loss ? [] : [pct(l.accuracy)])])),
  };
}
