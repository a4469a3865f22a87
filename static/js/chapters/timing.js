// Chapter 6, dropping the recurrence: the LSTM's encoder against the Transformer's, wall time
// against input length on the server's own hardware (POST /api/timing). The measurement costs
// seconds of the server's time, so it runs only when the reader presses the button (a result the
// server kept answers at once); while it runs, GET /api/timing/status gives the progress. A server
// busy with someone else's measurement (429) says when it will be done: the lifecycle asks again then.
import * as api from "../api.js";
import { fillStory, fmt } from "../facts.js";
import { whenNear } from "../lazy.js";
import { baseLayout, draw as drawPlot, plotText, showEmpty } from "../plots.js";
import * as store from "../store.js";

export const chapter = "6";
export const title = "timing";
export const figures = ["timing-plot", "timing-measure", "timing-progress", "timing-status", "timing-story"];
export const asks = "self";

const POLL_MS = 400;
const ROUGHLY = 1.5; // "in roughly the time": within this factor
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let lab = null;
let answer = null; // the answer drawn

export function mount(context) {
  lab = context;
  showEmpty(lab.part("timing-plot"), "Press “Measure on this server” to time both encoders here.");
  lab.part("timing-measure").addEventListener("click", measure);
}

export const keys = () => [null];
export const panels = () => [lab.part("timing-status")];

/** The URL's lengths (null: the server's), measured afresh once this page has a measurement. */
export async function ask(text, signal) {
  const stop = poll();
  try {
    return await api.timing(lab.page.tlen, Boolean(answer), signal);
  } finally {
    stop();
  }
}

export function failure(error) {
  if (error instanceof api.ApiError && error.status === 429) return `Someone else is measuring on this server right now (${api.explain(error)}).`;
  return `The measurement failed (${api.explain(error)}).`;
}

export function draw(next) {
  answer = next;
  say(`Measured ${new Date(answer.measured_at).toLocaleString()} on ${answer.device_name}.`);
  lab.part("timing-measure").textContent = "Measure again";
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
  say("Measuring…");
  await lab.ask();
  progress.hidden = true;
  button.disabled = false;
}

function say(message) {
  lab.part("timing-status").textContent = message;
}

/** Show the server's progress until the returned function is called. */
function poll() {
  const polling = { on: true };
  const progress = lab.part("timing-progress");
  (async () => {
    while (polling.on) {
      try {
        const status = await api.timingStatus();
        if (status.running && polling.on) {
          progress.max = Math.max(status.total, 1);
          progress.value = status.done;
          progress.setAttribute("aria-valuetext", `${status.done} of at most ${status.total} calls timed`);
        }
      } catch {
        // progress is a nicety: the measurement's own answer says what happened
      }
      await wait(POLL_MS);
    }
  })();
  return () => { polling.on = false; };
}

/** The story's facts; the two encoders as the server chose them (by what they have inside, not by name). */
function facts(a) {
  const { recurrent, parallel } = a.roles;
  const [shortest, longest] = [Math.min(...a.lengths), Math.max(...a.lengths)];
  const ratio = a.parallel_longest_over_recurrent_shortest;
  const faster = a.recurrent_over_parallel_longest;
  const verdict = ratio <= ROUGHLY
    ? `the seed's claim holds here: ${longest} pieces through the Transformer took no more than ${ROUGHLY}× the LSTM's ${shortest}`
    : `the seed's claim does not hold on this machine, where ${longest} pieces through the Transformer took ${fmt(ratio)}× the LSTM's ${shortest}`;
  const side = faster > 1 ? "at that length the Transformer was the faster encoder" : "the LSTM was the faster encoder even there";
  return {
    "device-name": a.device_name, device: a.device, threads: String(a.torch_threads),
    "measured-at": `measured ${new Date(a.measured_at).toLocaleString()}`, shortest: String(shortest), longest: String(longest),
    "growth-recurrent": fmt(a.growth[recurrent]), "growth-parallel": fmt(a.growth[parallel]),
    "transformer-over-lstm": fmt(ratio), "lstm-over-transformer": fmt(faster), verdict: `${verdict}; ${side}`,
    "encoder-recurrent": a.encoders[recurrent], "encoder-parallel": a.encoders[parallel],
    complete: a.complete ? `Every length was timed up to ${a.max_repeats} times within the ${a.limit_s} s limit.`
      : `The ${a.limit_s} s limit cut some lengths short of ${a.max_repeats} repeats.`,
  };
}

function tell() {
  const said = facts(answer);
  fillStory(lab.part("timing-story"), said);
  for (const p of lab.part("timing-story").querySelectorAll(".timing-result")) p.hidden = false;
  store.headline(chapter, `at ${said.longest} pieces the LSTM encoder took ${said["lstm-over-transformer"]}× the Transformer's time (${answer.device}).`, true);
}

export function describe(shown) {
  const said = facts(shown);
  return `Measured on ${said["device-name"]} (${said.device}): from ${said.shortest} to ${said.longest} pieces the LSTM encoder's time ` +
    `grew ${said["growth-recurrent"]}×, the Transformer encoder's ${said["growth-parallel"]}×; ${said.verdict}.`;
}

export function rows(shown) {
  return {
    caption: `Median wall time of one encoder call against input length, on ${shown.device_name} (${shown.device})`,
    headers: ["encoder", "input length (pieces)", "median wall time (ms)", "repeats"],
    rows: Object.entries(shown.timings).flatMap(([model, timed]) =>
      timed.map((t) => [model, String(t.length), fmt(t.median_ms), String(t.repeats)])),
  };
}

function drawTiming(div, shown, catalog) {
  const models = Object.keys(shown.timings);
  if (!models.length) {
    showEmpty(div, "Nothing was timed.");
    return;
  }
  const data = models.map((model) => ({
    type: "scatter", mode: "lines+markers", name: plotText(model),
    x: shown.timings[model].map((t) => t.length), y: shown.timings[model].map((t) => t.median_ms),
    customdata: shown.timings[model].map((t) => t.repeats),
    line: { color: catalog.colour(model), width: 2.5 }, marker: { size: 7, symbol: catalog.marker(model) },
    hovertemplate: `<b>${plotText(model)}</b><br>%{x} pieces: %{y:.3g} ms<br>median of %{customdata}<extra></extra>`,
  }));
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "input length (pieces)" }, type: "log", gridcolor: "#eceef3" },
    yaxis: { title: { text: "median wall time (ms)" }, type: "log", gridcolor: "#eceef3" },
    legend: { x: 0, y: 1, bgcolor: "rgba(255,255,255,0.85)" },
  });
  drawPlot(div, data, layout, `encoder-timing-${shown.device}`, shown);
}
