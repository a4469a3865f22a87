// Watching attention being learned, the view the attention and heads chapters each have one of (their modules
// alignment-replay.js and heads-replay.js are made here): a step slider over one model's training,
// from its seeded initialization through the stored snapshots to the shipped weights (GET
// /api/models: `snapshots`). At each step the typed sentence's translation and cross-attention map
// (POST /api/snapshots), how sharp its rows are, and the validation BLEU of that step.
import * as api from "./api.js";
import { el } from "./dom.js";
import { fmt, mapTable, sharpness, strongest } from "./facts.js";
import { decimal, label, listOf, t } from "./i18n.js";
import { alignmentLayout, attentionTrace, baseLayout, draw as drawPlot, OKABE_ITO, showEmpty, themed } from "./plots.js";
import { couldNot } from "./requests.js";
import { countOrNull } from "./url-state.js";
/** The heads chapter: per-head contributions through W_O, alignment ranking, rollout, `heads_off`'s effect. */
export const fetchSnapshot = (text, model, step, signal) =>
  api.post("/api/snapshots", { text, model, step, kinds: ["cross"] }, signal);

const PLAY_MS = 1400; // a frame's time on screen while playing

/**
 * A chapter view (the shape of static/js/chapters/) replaying the training of the first model of
 * `candidates(catalog)` trained with snapshots, in `chapter`'s part `container`; `key`: the URL
 * state's key of the step shown (a training step; absent: the shipped weights).
 */
export function replayView({ chapter, container, key, candidates }) {
  const replay = { lab: null, model: null, timeline: [], index: 0, answer: null, timer: 0 };
  const parts = {}; // play, slider, label, head, story, mapPlot, curvePlot

  function mount(context) {
    replay.lab = context;
    const place = context.part(container);
    const found = candidates(context.catalog);
    replay.model = found.find((m) => m.snapshots && m.snapshots.length > 1) || null;
    if (!replay.model) {
      const who = listOf(found.map((m) => m.name)) || t("replay.none-loaded");
      place.replaceChildren(label(el("p", "panel panel--note"), "replay.no-snapshots", { who }));
      return;
    }
    const { page } = context;
    replay.timeline = replay.model.snapshots;
    replay.index = Math.max(0, replay.timeline.findIndex((p) => p.step === page[key]));
    if (replay.timeline[replay.index].step !== page[key]) replay.index = replay.timeline.length - 1;
    build(place);
  }

  function build(place) {
    const name = replay.model.name;
    parts.play = label(el("button", "button"), "replay.play");
    parts.play.type = "button";
    parts.play.dataset.testid = `scrub-play-${name}`;
    parts.play.addEventListener("click", toggle);
    parts.slider = el("input");
    Object.assign(parts.slider, { type: "range", min: "0", max: String(replay.timeline.length - 1), step: "1", value: String(replay.index) });
    parts.slider.dataset.testid = `scrub-${name}`;
    label(parts.slider, "replay.slider", { name }, "aria-label");
    parts.slider.addEventListener("input", () => go(Number(parts.slider.value)));
    parts.label = el("output", "toolbar__value");
    parts.label.dataset.testid = `scrub-label-${name}`;
    parts.head = headPicker(replay.model);
    parts.head.addEventListener("change", redraw);
    const toolbar = el("div", "toolbar");
    const group = el("div", "toolbar__group toolbar__group--grow");
    group.append(parts.play, parts.slider, parts.label, parts.head);
    toolbar.append(group);
    parts.story = el("p", "story");
    parts.story.dataset.testid = `scrub-story-${name}`;
    parts.story.setAttribute("aria-live", "polite");
    parts.mapPlot = figure(["replay.map-title", { name }], `scrub-map-${name}`, "plot plot--align");
    parts.curvePlot = figure(["replay.curve-title", {}], `scrub-curve-${name}`, "plot plot--small");
    label(parts.curvePlot, "replay.reading", {}, "data-waiting");
    const pair = el("div", "pair");
    pair.append(parts.mapPlot.parentElement, parts.curvePlot.parentElement);
    place.replaceChildren(toolbar, parts.story, pair);
    tell();
  }

  /** The step at `index` (the slider, or playing): into the URL, said, and asked for. */
  function go(index) {
    replay.index = index;
    parts.slider.value = String(index);
    replay.lab.page.set({ [key]: replay.timeline[index].step });
    tell();
    return replay.lab.ask();
  }

  function ask(text, signal) {
    parts.mapPlot.dataset.step = "";
    return fetchSnapshot(text, replay.model.name, replay.timeline[replay.index].step, signal);
  }

  function draw(answer) {
    replay.answer = answer;
    redraw();
  }

  const selected = () => parts.head.value.split(".").map(Number);
  const mapOf = (answer) => {
    const [layer, head] = selected();
    return answer.maps.find((m) => m.kind === "cross" && m.layer === layer && m.head === head);
  };

  function redraw() {
    const answer = replay.answer;
    if (!answer) return;
    const map = mapOf(answer);
    const point = answer.snapshot;
    if (!map || !map.rows.length) {
      showEmpty(parts.mapPlot, t("replay.no-translation", { step: String(point.step), name: replay.model.name }));
    } else {
      drawPlot(parts.mapPlot, [attentionTrace(map)], alignmentLayout(map), `training-${replay.model.name}-step-${point.step}`, answer);
    }
    parts.mapPlot.dataset.step = String(point.step);
    tell(map);
    drawCurve();
  }

  /** The step's facts in words, all of them measured (the answer, the training log). */
  function story(point, map, answer) {
    const last = replay.timeline[replay.timeline.length - 1].step;
    const weights = t(`replay.weights.${point.weights}`, { precision: point.precision });
    const minutes = point.seconds == null ? undefined : fixed(point.seconds / 60, 1);
    let text = t(minutes === undefined ? "replay.step" : "replay.step-timed", { step: String(point.step), last: String(last), minutes, weights,
      bleu: fixed(point.valid_bleu, 1), loss: fixed(point.valid_loss, 2) });
    if (map && answer && answer.snapshot.step === point.step) {
      const fog = 1 / map.cols.length;
      const translates = t("replay.translates", { translation: answer.translation, sharpness: fixed(sharpness(map.weights), 2), count: map.cols.length, fog: fixed(fog, 2) });
      text = t("sentences.two", { first: text, second: translates });
    }
    return text;
  }

  function tell(map) {
    const point = replay.timeline[replay.index];
    parts.label.textContent = t("replay.step-mark", { step: String(point.step) });
    parts.story.textContent = story(point, map, replay.answer);
  }

  function drawCurve() {
    const here = replay.timeline[replay.index];
    const layout = baseLayout({
      margin: { l: 48, r: 12, t: 8, b: 44 },
      xaxis: { title: { text: t("training.curves.step") }, zeroline: false },
      yaxis: { title: { text: t("training.curves.valid-bleu") }, rangemode: "tozero" },
      showlegend: false,
    });
    drawPlot(parts.curvePlot, [
      { type: "scatter", mode: "lines+markers", x: replay.timeline.map((p) => p.step), y: replay.timeline.map((p) => p.valid_bleu),
        line: { color: themed("muted") }, hovertemplate: t("replay.hover") },
      { type: "scatter", mode: "markers", x: [here.step], y: [here.valid_bleu], marker: { size: 14, color: OKABE_ITO.vermillion }, hoverinfo: "skip" },
    ], layout, `training-${replay.model.name}-bleu`, replay.timeline);
  }

  function toggle() {
    if (replay.timer) return stop();
    label(parts.play, "replay.pause");
    const next = async () => {
      const index = replay.index >= replay.timeline.length - 1 ? 0 : replay.index + 1;
      const failed = await go(index);
      if (!replay.timer) return;
      if (failed || index >= replay.timeline.length - 1) return stop();
      replay.timer = setTimeout(next, PLAY_MS);
    };
    replay.timer = setTimeout(next, 0);
  }

  function stop() {
    clearTimeout(replay.timer);
    replay.timer = 0;
    label(parts.play, "replay.play");
  }

  const pointOf = (answer) => replay.timeline.find((p) => p.step === answer.snapshot.step) || answer.snapshot;

  return {
    chapter, title: "training replay", figures: [container], asks: "text", mount, ask, draw,
    // the URL's `key`: the training step shown (absent: the shipped weights), checked against the timeline as it mounts
    state: { [key]: { read: (q) => ({ [key]: countOrNull(q, key) }), write: (page) => (page[key] === null ? null : String(page[key])) } },
    keys: () => (replay.model ? [null] : []),
    panels: () => [parts.mapPlot, parts.curvePlot],
    failure: (error) => couldNot(t("replay.what"), error),
    describe: (answer, key, plot) => {
      if (plot === parts.curvePlot) {
        const [first, last] = [replay.timeline[0], replay.timeline.at(-1)];
        return t("replay.curve-describe", { name: replay.model.name, count: replay.timeline.length, firstBleu: fmt(first.valid_bleu),
          first: String(first.step), lastBleu: fmt(last.valid_bleu), last: String(last.step), shown: String(pointOf(answer).step) });
      }
      const map = mapOf(answer);
      const told = story(pointOf(answer), map, answer);
      return map && map.rows.length ? t("sentences.two", { first: told, second: t("replay.each-word", { looks: strongest(map) }) }) : told;
    },
    rows: (answer, key, plot) => {
      if (plot === parts.curvePlot) {
        return { caption: t("replay.curve-caption", { name: replay.model.name }), headers: [t("training.curves.step"), t("training.curves.valid-bleu")],
          rows: replay.timeline.map((p) => [String(p.step), fmt(p.valid_bleu)]) };
      }
      const map = mapOf(answer) || { rows: [], cols: [], weights: [] };
      const [layer, head] = selected();
      const which = replay.model.heads > 1 ? t("heads.heads.layer-head", { layer: String(layer + 1), head: String(head + 1) }) : t("replay.alignment");
      return mapTable(map, t("replay.caption", { name: replay.model.name, step: String(answer.snapshot.step), which, bleu: fmt(pointOf(answer).valid_bleu) }));
    },
  };
}

/** The cross-attention maps a model has: its heads by layer (the last layer first), or its one alignment. */
function headPicker(model) {
  const select = el("select");
  select.dataset.testid = `scrub-head-${model.name}`;
  label(select, "replay.which-map", {}, "aria-label");
  for (let layer = model.layers - 1; layer >= 0; layer -= 1) {
    for (let head = 0; head < Math.max(model.heads, 1); head += 1) {
      const option = model.heads > 1 ? label(el("option"), "heads.heads.layer-head", { layer: String(layer + 1), head: String(head + 1) })
        : label(el("option"), "replay.alignment");
      option.value = `${layer}.${head}`;
      select.append(option);
    }
  }
  select.hidden = select.options.length < 2;
  return select;
}

/** A figure titled by the message [key, values]; returns its plot. */
function figure([key, values], testid, className) {
  const caption = el("figcaption", "panel__caption");
  caption.append(label(el("span", "panel__title"), key, values));
  const div = el("div", className);
  div.dataset.testid = testid;
  div.setAttribute("role", "group");
  label(div, key, values, "aria-label");
  el("figure", "panel").append(caption, div);
  return div;
}

const fixed = (value, digits) => (value == null ? t("replay.not-measured") : decimal(Number(value).toFixed(digits)));
