// The parallel chapter, dropping the recurrence: the LSTM's encoder against the Transformer's, wall time
// against input length on the server's own hardware (POST /api/timing). The measurement costs
// seconds of the server's time, so it runs only when the reader presses the button (a result the
// server kept answers at once); while it runs, GET /api/timing/status gives the progress. A server
// busy with someone else's measurement (429) says when it will be done: the lifecycle asks again then.
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { label, language, number, t } from "../i18n.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, plotText, showEmpty, themed } from "../plots.js";
import * as store from "../store.js";

export const chapter = "parallel";
export const fetchTimingStatus = (signal) => api.get("/api/timing/status", signal);
/** The parallel chapter: encoder time against length (`lengths` null: the server's), and its progress. */
export const fetchTiming = (lengths, refresh, signal) =>
  api.post("/api/timing", { ...(lengths ? { lengths } : {}), refresh }, signal);
export const title = "timing";
export const figures = ["timing-plot", "timing-measure", "timing-progress", "timing-status", "timing-story"];
export const asks = "self";

/** The URL's `tlen`: the lengths measured, comma-separated (absent: the server's). */
export const state = {
  tlen: {
    read(q, { catalog }) {
      const lengths = (q.get("tlen") || "").split(",").map(Number);
      const { max_timing_lengths: most, max_timing_length: longest } = catalog.limits;
      const fits = lengths.length >= 2 && lengths.length <= most && lengths.every((n) => Number.isInteger(n) && n >= 1 && n <= longest);
      return { tlen: fits ? lengths : null };
    },
    write: (p) => (p.tlen ? p.tlen.join(",") : null),
  },
};

const POLL_MS = 400;
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let lab = null;
let answer = null; // the answer drawn

export function mount(context) {
  lab = context;
  showEmpty(lab.part("timing-plot"), ["parallel.timing.press"]);
  lab.part("timing-measure").addEventListener("click", measure);
}

export const keys = () => [null];
export const panels = () => [lab.part("timing-status")];

/** The URL's lengths (null: the server's), measured afresh once this page has a measurement. */
export async function ask(text, signal) {
  const stop = poll();
  try {
    return await fetchTiming(lab.page.tlen, Boolean(answer), signal);
  } finally {
    stop();
  }
}

export function failure(error) {
  if (error instanceof api.ApiError && error.status === 429) return t("parallel.timing.someone-else", { why: api.explain(error) });
  return t("parallel.timing.failure", { why: api.explain(error) });
}

export function draw(next) {
  answer = next;
  say(t("parallel.timing.measured", { when: when(answer.measured_at), device: answer.device_name }));
  label(lab.part("timing-measure"), "parallel.timing.again");
  tell();
  const div = lab.part("timing-plot");
  whenNear(div, () => drawTiming(div, answer, lab.catalog));
}

/** The button: one measurement at a time, its progress shown until it is drawn or its failure said. */
async function measure() {
  const button = lab.part("timing-measure");
  if (button.disabled) return;
  button.disabled = true;
  const progress = lab.part("timing-progress");
  progress.hidden = false;
  progress.value = 0;
  say(t("parallel.timing.measuring"));
  await lab.ask();
  progress.hidden = true;
  button.disabled = false;
}

function say(message) {
  delete lab.part("timing-status").dataset.i18n; // no longer the template's words
  lab.part("timing-status").textContent = message;
}

const when = (at) => new Date(at).toLocaleString(language());

/** Show the server's progress until the returned function is called. */
function poll() {
  const polling = { on: true };
  const progress = lab.part("timing-progress");
  (async () => {
    while (polling.on) {
      try {
        const status = await fetchTimingStatus();
        if (status.running && polling.on) {
          progress.max = Math.max(status.total, 1);
          progress.value = status.done;
          progress.setAttribute("aria-valuetext", t("parallel.timing.progress", { done: String(status.done), total: String(status.total) }));
        }
      } catch {
        // progress is a nicety: the measurement's own answer says what happened
      }
      await wait(POLL_MS);
    }
  })();
  return () => { polling.on = false; };
}

/** An encoder's size in the page's words, from the numbers the server measured it by. */
export function encoderSaid(a, name) {
  const size = a.encoder_sizes[name];
  const numbers = Object.fromEntries(Object.entries(size).filter(([, v]) => Number.isInteger(v)).map(([k, v]) => [k, String(v)]));
  if (Number.isInteger(size.heads)) return t("parallel.timing.encoder-size.transformer", numbers); // an encoder of heads, not of cells
  return t("parallel.timing.encoder-size.recurrent", { ...numbers, cell: size.cell.toUpperCase(), count: size.layers });
}

/** The story's facts; the two encoders as the server chose them (by what they have inside, not by name). */
function facts(a) {
  const { recurrent, parallel } = a.roles;
  const [shortest, longest] = [Math.min(...a.lengths), Math.max(...a.lengths)];
  const faster = a.recurrent_over_parallel_longest; // like with like: both encoders at the longest length
  const verdict = t(faster > 1 ? "parallel.timing.transformer-faster" : "parallel.timing.lstm-faster");
  return {
    "device-name": a.device_name, device: a.device, threads: String(a.torch_threads),
    "measured-at": t("parallel.timing.measured-at", { when: when(a.measured_at) }), shortest: String(shortest), longest: String(longest),
    "growth-recurrent": fmt(a.growth[recurrent]), "growth-parallel": fmt(a.growth[parallel]),
    "lstm-over-transformer": fmt(faster), verdict,
    "encoder-recurrent": encoderSaid(a, recurrent), "encoder-parallel": encoderSaid(a, parallel),
    complete: t(a.complete ? "parallel.timing.complete" : "parallel.timing.incomplete", { repeats: String(a.max_repeats), limit: number(a.limit_s) }),
  };
}

function tell() {
  const said = facts(answer);
  fillStory(lab.part("timing-story"), said);
  for (const p of lab.part("timing-story").querySelectorAll(".timing-result")) p.hidden = false;
  store.headline(chapter, t("parallel.timing.headline", { longest: said.longest, times: said["lstm-over-transformer"], device: answer.device }), true);
}

export function describe(shown) {
  const said = facts(shown);
  return t("parallel.timing.describe", { name: said["device-name"], device: said.device, shortest: said.shortest, longest: said.longest,
    recurrent: said["growth-recurrent"], parallel: said["growth-parallel"], verdict: said.verdict });
}

export function rows(shown) {
  return {
    caption: t("parallel.timing.caption", { name: shown.device_name, device: shown.device }),
    headers: [t("parallel.timing.encoder"), t("parallel.timing.x-axis"), t("parallel.timing.y-axis"), t("parallel.timing.repeats")],
    rows: Object.entries(shown.timings).flatMap(([model, timed]) =>
      timed.map((row) => [model, String(row.length), fmt(row.median_ms), String(row.repeats)])),
  };
}

function drawTiming(div, shown, catalog) {
  const models = Object.keys(shown.timings);
  if (!models.length) {
    showEmpty(div, t("parallel.timing.nothing"));
    return;
  }
  const data = models.map((model) => ({
    type: "scatter", mode: "lines+markers", name: plotText(model),
    x: shown.timings[model].map((row) => row.length), y: shown.timings[model].map((row) => row.median_ms),
    customdata: shown.timings[model].map((row) => row.repeats),
    line: { color: catalog.colour(model), width: 2.5 }, marker: { size: 7, symbol: catalog.marker(model) },
    hovertemplate: t("parallel.timing.hover", { model: plotText(model) }),
  }));
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: t("parallel.timing.x-axis") }, type: "log", gridcolor: themed("grid") },
    yaxis: { title: { text: t("parallel.timing.y-axis") }, type: "log", gridcolor: themed("grid") },
    legend: { x: 0, y: 1, bgcolor: "rgba(255,255,255,0.85)" },
  });
  drawPlot(div, data, layout, `encoder-timing-${shown.device}`, shown);
}
