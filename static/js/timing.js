// Chapter 6, dropping the recurrence: the LSTM's encoder against the Transformer's, wall time
// against input length on the server's own hardware (POST /api/timing). The measurement costs
// seconds of the server's time, so it runs only when the reader presses the button (a result
// the server kept answers at once); while it runs, GET /api/timing/status gives the progress,
// and a server busy with someone else's measurement (429) is waited for, then asked again.
import * as api from "./api.js";
import { partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { baseLayout, draw, plotText, showEmpty } from "./plots.js";
import { headline } from "./recap.js";
import { fillStory, fmt } from "./facts.js";

const POLL_MS = 400;
const ROUGHLY = 1.5; // "in roughly the time": within this factor
const MAX_REFUSALS = 3; // "busy" answers waited out before the page gives up and says so
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class TimingView {
  /** `root`: chapter 6's section; `page`: the URL state (tlen: the lengths to time, null: the server's). */
  constructor(root, { catalog, page }) {
    this.$ = partsOf(root);
    this.catalog = catalog;
    this.page = page;
    this.answer = null;
    this.running = false;
    showEmpty(this.$("timing-plot"), "Press “Measure on this server” to time both encoders here.");
    this.$("timing-measure").addEventListener("click", () => this.measure());
  }

  async measure() {
    if (this.running) return;
    this.running = true;
    const button = this.$("timing-measure");
    button.disabled = true;
    const progress = this.$("timing-progress");
    progress.hidden = false;
    progress.value = 0;
    this.say("Measuring…");
    const polling = { on: true };
    this.poll(polling);
    let refusals = 0;
    try {
      for (;;) {
        try {
          this.answer = await api.timing(this.page.tlen, Boolean(this.answer));
          break;
        } catch (error) {
          // 429: someone else's measurement runs; wait for it, a few times at most, then say so
          if (!(error instanceof api.ApiError) || error.status !== 429 || ++refusals > MAX_REFUSALS) throw error;
          this.say("Someone else is measuring on this server right now: waiting for theirs to finish, then asking again.");
          await this.idle();
        }
      }
      this.say(`Measured ${new Date(this.answer.measured_at).toLocaleString()} on ${this.answer.device_name}.`);
      button.textContent = "Measure again";
      this.tell();
      whenNear(this.$("timing-plot"), () => drawTiming(this.$("timing-plot"), this.answer, this.catalog));
    } catch (error) {
      this.say(`The measurement failed (${api.explain(error)}).`);
    } finally {
      polling.on = false;
      progress.hidden = true;
      button.disabled = false;
      this.running = false;
    }
  }

  say(message) {
    this.$("timing-status").textContent = message;
  }

  /** Show the server's progress until `polling.on` is false. */
  async poll(polling) {
    const progress = this.$("timing-progress");
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
  }

  /** Resolve once no measurement runs on the server. */
  async idle() {
    for (;;) {
      await wait(POLL_MS);
      const status = await api.timingStatus().catch(() => ({ running: false }));
      if (!status.running) return;
    }
  }

  /** The two encoders timed, as the server chose them (by what they have inside, not by name). */
  roles() {
    return this.answer.roles;
  }

  tell() {
    const a = this.answer;
    const { recurrent, parallel } = this.roles();
    const [shortest, longest] = [Math.min(...a.lengths), Math.max(...a.lengths)];
    const ratio = a.parallel_longest_over_recurrent_shortest;
    const faster = a.recurrent_over_parallel_longest;
    const verdict = ratio <= ROUGHLY
      ? `the seed's claim holds here: ${longest} pieces through the Transformer took no more than ${ROUGHLY}× the LSTM's ${shortest}`
      : `the seed's claim does not hold on this machine, where ${longest} pieces through the Transformer took ${fmt(ratio)}× the LSTM's ${shortest}`;
    const side = faster > 1 ? "at that length the Transformer was the faster encoder" : "the LSTM was the faster encoder even there";
    fillStory(this.$("timing-story"), {
      "device-name": a.device_name, device: a.device, threads: String(a.torch_threads),
      "measured-at": `measured ${new Date(a.measured_at).toLocaleString()}`, shortest: String(shortest), longest: String(longest),
      "growth-recurrent": fmt(a.growth[recurrent]), "growth-parallel": fmt(a.growth[parallel]),
      "transformer-over-lstm": fmt(ratio), "lstm-over-transformer": fmt(faster), verdict: `${verdict}; ${side}`,
      "encoder-recurrent": a.encoders[recurrent], "encoder-parallel": a.encoders[parallel],
      complete: a.complete ? `Every length was timed up to ${a.max_repeats} times within the ${a.limit_s} s limit.`
        : `The ${a.limit_s} s limit cut some lengths short of ${a.max_repeats} repeats.`,
    });
    for (const p of this.$("timing-story").querySelectorAll(".timing-result")) p.hidden = false;
    headline(6, `at ${longest} pieces the LSTM encoder took ${fmt(faster)}× the Transformer's time (${a.device}).`, true);
  }
}

function drawTiming(div, answer, catalog) {
  const models = Object.keys(answer.timings);
  if (!models.length) {
    showEmpty(div, "Nothing was timed.");
    return;
  }
  const data = models.map((model) => ({
    type: "scatter", mode: "lines+markers", name: plotText(model),
    x: answer.timings[model].map((t) => t.length), y: answer.timings[model].map((t) => t.median_ms),
    customdata: answer.timings[model].map((t) => t.repeats),
    line: { color: catalog.colour(model), width: 2.5 }, marker: { size: 7, symbol: catalog.marker(model) },
    hovertemplate: `<b>${plotText(model)}</b><br>%{x} pieces: %{y:.3g} ms<br>median of %{customdata}<extra></extra>`,
  }));
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "input length (pieces)" }, type: "log", gridcolor: "#eceef3" },
    yaxis: { title: { text: "median wall time (ms)" }, type: "log", gridcolor: "#eceef3" },
    legend: { x: 0, y: 1, bgcolor: "rgba(255,255,255,0.85)" },
  });
  draw(div, data, layout, `encoder-timing-${answer.device}`, answer);
}
