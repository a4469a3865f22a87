// Train it yourself (chapter 4 -> 5): the reader trains the bottleneck and the LSTM that looks back
// on a task whose answer is known (POST /api/train, models/live.py), and watches the loss, the
// held-out accuracy and one probe's attention map as they train. A finished run's curves stay,
// dotted, beside the next. The verdict is written from the run's own numbers.
import * as api from "./api.js";
import { el, partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { MODEL_MARKERS, MODEL_PALETTE, WEIGHT_SCALE, baseLayout, draw, plotText, showEmpty } from "./plots.js";

const pct = (x) => `${Math.round(100 * x)}%`;

export class LiveTraining {
  /** `root`: chapter 4's section; `page`: URL state (tt, tl, tc, tseed, tsteps), changed through
   * `onChange(changes)`; `info`: GET /api/train. */
  constructor(root, { page, onChange, info }) {
    Object.assign(this, { info, page, onChange });
    this.$ = partsOf(root);
    this.runs = []; // {settings, lines: Map contestant -> [progress lines], finals: Map, summary}
    this.controller = null;
    this.maps = new Map(); // contestant -> its map div
    this.buildControls();
    this.$("live-start").addEventListener("click", () => this.start());
    this.$("live-stop").addEventListener("click", () => this.controller?.abort());
    this.$("live-x").addEventListener("change", () => this.drawCurves());
    showEmpty(this.$("live-loss"), "Press “Train” to train the contestants here, live.");
    showEmpty(this.$("live-accuracy"), "Held-out exact-sequence accuracy appears here as they train.");
    drawReference(this.$("live-reference"), info, this.settings());
  }

  buildControls() {
    const { defaults, limits, tasks, contestants } = this.info;
    const task = this.$("live-task");
    task.replaceChildren(...tasks.map((t) => new Option(t === "reverse" ? "Reverse it" : "Copy it", t)));
    task.value = tasks.includes(this.page.tt) ? this.page.tt : defaults.task;
    const length = this.$("live-length");
    Object.assign(length, { min: limits.min_length, max: limits.max_length });
    const asked = Number(this.page.tl);
    length.value = asked >= limits.min_length && asked <= limits.max_length ? asked : defaults.length;
    const steps = this.$("live-steps");
    Object.assign(steps, { min: 1, max: limits.max_steps });
    steps.value = this.page.tsteps >= 1 && this.page.tsteps <= limits.max_steps ? this.page.tsteps : defaults.steps;
    this.$("live-seed").value = Number.isInteger(this.page.tseed) ? this.page.tseed : defaults.seed;
    const chosen = this.page.tc?.length ? this.page.tc : defaults.contestants;
    this.$("live-contestants").replaceChildren(...contestants.map((c) => {
      const box = el("input");
      Object.assign(box, { type: "checkbox", value: c.name, checked: chosen.includes(c.name) });
      box.dataset.testid = `live-pick-${c.name}`;
      const label = el("label", "live__pick");
      label.append(box, ` ${c.name} `, el("span", "live__kind", c.attention ? `looks back (${c.attention})` : "one vector"));
      return label;
    }));
    for (const input of this.$("live-controls").querySelectorAll("input, select")) {
      input.addEventListener("change", () => {
        this.onChange(this.state());
        drawReference(this.$("live-reference"), this.info, this.settings());
      });
    }
  }

  /** The settings the controls show (the server checks them again). */
  settings() {
    const contestants = [...this.$("live-contestants").querySelectorAll("input:checked")].map((b) => b.value);
    return { task: this.$("live-task").value, length: Number(this.$("live-length").value), contestants,
      steps: Number(this.$("live-steps").value), seed: Number(this.$("live-seed").value) };
  }

  state() {
    const s = this.settings();
    return { tt: s.task, tl: s.length, tc: s.contestants, tseed: s.seed, tsteps: s.steps };
  }

  async start() {
    if (this.controller) return;
    const settings = this.settings();
    if (!settings.contestants.length) return this.say("Pick at least one contestant.");
    const run = { settings, lines: new Map(), finals: new Map(), summary: null, error: null };
    if (this.runs.length) this.runs = [this.runs[this.runs.length - 1]]; // the last finished run stays beside
    this.runs.push(run);
    this.controller = new AbortController();
    this.busy(true);
    this.say(`Training ${settings.contestants.join(", ")} on ${settings.task} of ${settings.length} symbols…`);
    this.prepareMaps(settings.contestants);
    try {
      await api.train(settings, this.controller.signal, (line) => this.take(run, JSON.parse(line)));
      this.say(run.error ? `The run stopped early: ${run.error}` : verdict(run));
    } catch (error) {
      if (api.isAbort(error)) this.say(`Stopped. ${verdict(run, true)}`);
      else this.say(`The run could not go on (${api.explain(error)}).`);
    } finally {
      this.controller = null;
      this.busy(false);
      this.drawCurves();
    }
  }

  take(run, line) {
    if (line.error) run.error = line.error;
    if (line.probe) run.probe = line.probe;
    if (line.summary) run.summary = line.summary;
    if (!line.contestant) return;
    if (line.done) run.finals.set(line.contestant, line);
    else {
      if (!run.lines.has(line.contestant)) run.lines.set(line.contestant, []);
      run.lines.get(line.contestant).push(line);
    }
    if (line.map) this.drawMap(run, line.contestant, line);
    this.drawCurves();
  }

  busy(on) {
    this.$("live-start").disabled = on;
    this.$("live-stop").disabled = !on;
    document.documentElement.dataset.liveRunning = on ? "true" : "";
  }

  say(message) {
    this.$("live-status").textContent = message;
  }

  prepareMaps(names) {
    const holder = this.$("live-maps");
    holder.replaceChildren();
    this.maps.clear();
    for (const name of names) {
      const info = this.info.contestants.find((c) => c.name === name);
      if (!info?.attention) continue;
      const figure = el("figure", "panel");
      const caption = el("figcaption", "panel__caption");
      caption.append(el("span", "panel__title", `Where ${name} looks, on the probe`));
      const div = el("div", "plot plot--small");
      div.dataset.testid = `live-map-${name}`;
      div.setAttribute("role", "group");
      div.setAttribute("aria-label", `Cross-attention of ${name} on the probe sequence as it trains`);
      figure.append(caption, div);
      holder.append(figure);
      this.maps.set(name, div);
      showEmpty(div, "Its attention on one probe sequence appears after its first turn.");
    }
  }

  drawMap(run, name, line) {
    const div = this.maps.get(name);
    if (!div || !run.probe) return;
    const src = run.probe.source.map(String);
    const out = [...run.probe.target.map(String), "end"];
    draw(div, [{
      type: "heatmap", z: line.map, x: src.map((_, i) => i), y: out.map((_, i) => i), zmin: 0, zmax: 1,
      colorscale: WEIGHT_SCALE, showscale: false, xgap: 1, ygap: 1,
      customdata: out.map((o) => src.map((s) => [o, s])),
      hovertemplate: "writing <b>%{customdata[0]}</b> → reading %{customdata[1]}<br>weight %{z:.3f}<extra></extra>",
    }], baseLayout({
      margin: { l: 44, r: 8, t: 28, b: 40 },
      title: { text: plotText(`step ${line.step}`), font: { size: 12 }, x: 0.02 },
      xaxis: { title: { text: "source symbol" }, tickvals: src.map((_, i) => i), ticktext: src },
      yaxis: { title: { text: "output" }, tickvals: out.map((_, i) => i), ticktext: out, autorange: "reversed" },
    }), `live-map-${name}`, { step: line.step, source: run.probe.source, target: run.probe.target, weights: line.map });
  }

  drawCurves() {
    if (!this.runs.length) return;
    const x = this.$("live-x").value; // "step" or "seconds"
    const traces = (key) => this.runs.flatMap((run, r) => [...run.lines].map(([name, lines]) => {
      const i = this.info.contestants.findIndex((c) => c.name === name);
      const old = r < this.runs.length - 1;
      return {
        type: "scatter", mode: "lines+markers", name: plotText(old ? `${name} (previous run)` : name),
        x: lines.map((l) => l[x]), y: lines.map((l) => l[key]),
        line: { color: MODEL_PALETTE[i % MODEL_PALETTE.length], dash: old ? "dot" : "solid", width: old ? 1.5 : 2.5 },
        marker: { symbol: MODEL_MARKERS[i % MODEL_MARKERS.length], size: 5 }, opacity: old ? 0.55 : 1,
      };
    }));
    const axis = { title: { text: x === "step" ? "training step" : "training seconds" } };
    draw(this.$("live-loss"), traces("loss"), baseLayout({ xaxis: axis, yaxis: { title: { text: "loss (nats)" }, type: "log" },
      legend: { orientation: "h", y: 1.15 } }), "live-loss", this.numbers());
    draw(this.$("live-accuracy"), traces("accuracy"), baseLayout({ xaxis: axis,
      yaxis: { title: { text: "held-out sequences exactly right" }, range: [0, 1.02], tickformat: ".0%" },
      legend: { orientation: "h", y: 1.15 } }), "live-accuracy", this.numbers());
  }

  numbers() {
    return this.runs.map((run) => ({ settings: run.settings, progress: Object.fromEntries(run.lines),
      final: Object.fromEntries(run.finals), summary: run.summary }));
  }
}

/** The run's verdict in words, from its own final numbers (`partial`: stopped by the reader). */
export function verdict(run, partial = false) {
  const s = run.summary;
  if (partial) {
    const last = [...run.lines.values()].map((lines) => lines[lines.length - 1]);
    if (!last.length) return "No contestant finished a turn.";
    return `Where they stood: ${last.map((l) => `${l.contestant} ${pct(l.accuracy)} of held-out sequences exact at step ${l.step}`).join(", ")}.`;
  }
  const finals = [...run.finals.values()];
  if (!finals.length) return "";
  const { task, length } = run.settings;
  const each = finals.map((f) => `${f.contestant} ${pct(f.accuracy)} after ${f.step} steps`).join(", ");
  const head = `${task === "reverse" ? "Reversing" : "Copying"} ${length} symbols, held-out sequences written back exactly: ${each}.`;
  if (!s || !s.best_attention || !s.best_bottleneck) return head;
  const a = s.best_attention;
  const b = s.best_bottleneck;
  const gap = Math.round(100 * (a.accuracy - b.accuracy));
  if (gap >= 20) return `${head} Looking back, ${a.contestant} beat the one-vector ${b.contestant} by ${gap} points.`;
  if (gap > 0) return `${head} ${a.contestant} is ahead of the one-vector ${b.contestant}, but only by ${gap} points: at this length and budget one vector nearly suffices.`;
  return `${head} Here the one-vector ${b.contestant} did as well as or better than ${a.contestant} (${pct(b.accuracy)} against ${pct(a.accuracy)}): at this length and budget the bottleneck is not the limit.`;
}

/** The shipped sweep for the chosen task, drawn when its figure is near the screen. */
function drawReference(div, info, settings) {
  whenNear(div, () => drawSweep(div, info, settings));
}

/** The shipped sweep: final accuracy against length for each contestant, the chosen length marked. */
function drawSweep(div, info, { task, length }) {
  const sweep = info.reference;
  const rows = (sweep?.rows || []).filter((r) => r.task === task);
  if (!rows.length) {
    showEmpty(div, `No reference sweep for this task ships with this server (python -m models.live sweep --task ${task}).`);
    return;
  }
  const names = [...new Set(rows.map((r) => r.contestant))];
  const traces = names.map((name) => {
    const own = rows.filter((r) => r.contestant === name).sort((p, q) => p.length - q.length);
    const i = info.contestants.findIndex((c) => c.name === name);
    return { type: "scatter", mode: "lines+markers", name: plotText(name), x: own.map((r) => r.length),
      y: own.map((r) => r.accuracy), line: { color: MODEL_PALETTE[i % MODEL_PALETTE.length] },
      marker: { symbol: MODEL_MARKERS[i % MODEL_MARKERS.length], size: 7 } };
  });
  draw(div, traces, baseLayout({
    xaxis: { title: { text: `symbols to ${task} (${sweep.settings.steps} steps each)` } },
    yaxis: { title: { text: "held-out sequences exactly right" }, range: [0, 1.02], tickformat: ".0%" },
    shapes: [{ type: "line", x0: length, x1: length, y0: 0, y1: 1, yref: "paper", line: { dash: "dot", color: "#8a93a6" } }],
    legend: { orientation: "h", y: 1.15 },
  }), "live-reference", { settings: sweep.settings, rows });
}
