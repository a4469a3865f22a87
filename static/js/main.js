// Wiring: what the server serves (catalog.js) and what the URL says (url-state.js) build the views;
// the text box drives them all. Each edit asks the server at once, and the views change after a
// pause in typing, each round of updates replacing the last (requests.js).
import * as api from "./api.js";
import { AlignmentView } from "./alignment.js";
import { BleuChart, bucketOf } from "./bleu.js";
import { loadCatalog } from "./catalog.js";
import { Chapters } from "./chapters.js";
import { Composer, say } from "./composer.js";
import { $, chapterRoot, partsOf } from "./dom.js";
import { Experiment } from "./experiment.js";
import { GradientsView } from "./gradients.js";
import { HeadsView } from "./heads.js";
import { HeadsLab } from "./heads-lab.js";
import { whenNear } from "./lazy.js";
import { LiveTraining } from "./live.js";
import { LongLagView } from "./long-lag.js";
import { OrderView } from "./order.js";
import { loadPlotly, showEmpty } from "./plots.js";
import { PredictView } from "./predict.js";
import { RecapView, newText } from "./recap.js";
import { RecurrenceView } from "./recurrence.js";
import { Requests } from "./requests.js";
import { ScalingView } from "./scaling.js";
import { ScoresView } from "./scores.js";
import { Scrubber } from "./scrubber.js";
import { TimingView } from "./timing.js";
import { TrainingView } from "./training.js";
import { TranslationCards } from "./translations.js";
import { UrlState } from "./url-state.js";

// The views change after this pause in typing. Long enough for every model's answer (asked at the
// keystroke, speculate.js) to be in when it ends, so the views change once and together; short
// enough that the page follows the reader within a tenth of a second (bench/README.md, bench_page.py).
const PAUSE_MS = 70;
window.attentionLab.pauseMs = PAUSE_MS; // for the benchmark's split of keystroke -> update
// Chapter 3's input-length slider asks for the heaviest experiment (the gradients) when the reader
// stops dragging: after a longer pause, so that a slow drag does not ask at every stop.
const MEASURE_PAUSE_MS = 120;
const UNAVAILABLE = "This model is not available: it did not load on the server.";

function debounce(fn, ms) {
  let timer = 0;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

/** One round for the text in the box: every model's answer, the gradient experiment, then the announcement. */
function update(lab) {
  const { page, composer, requests, cards } = lab;
  page.setSoon({ text: composer.text });
  const round = requests.begin();
  const problem = composer.problem(page.text);
  if (problem) {
    say(problem, page.text.trim() ? "warn" : "info");
    round.announce(page.text);
    return;
  }
  const failures = [];
  newText();
  cards.setBucket(bucketOf(page.text));
  lab.bleu.show(bucketOf(page.text), page.model);
  // asked while typing already (an example picked is asked here)
  const answers = requests.ahead(page.text, heaviestFirst(lab));
  const jobs = lab.catalog.names.map(async (name) => {
    cards.busy(name, true);
    try {
      const answer = await round.wait(answers.get(name));
      if (!round.current) return;
      for (const view of [cards, lab.alignment, lab.heads, lab.scores, lab.headsLab]) view.showAnswer(name, answer);
      round.drew(name);
    } catch (error) {
      if (api.isAbort(error) || !round.current) return;
      failures.push(`${name}: ${api.explain(error)}`);
      const missing = error instanceof api.ApiError && error.status === 404;
      cards.setProblem(name, missing ? UNAVAILABLE : `No answer this time (${api.explain(error)}).`);
      const why = missing ? UNAVAILABLE : `${name} gave no answer for this text (${api.explain(error)}).`;
      for (const view of [lab.alignment, lab.heads, lab.scores]) view.showProblem(name, why);
    }
  });
  // the chapter experiments (the gradients the heaviest): each asked once its figures come near the screen
  for (const experiment of lab.experiments) jobs.push(experiment.update(page.text.trim()).then((f) => f && failures.push(f)));
  Promise.all(jobs).then(() => {
    if (!round.current) return;
    say(failures.length ? `Some views could not update (${failures.join("; ")}). The others show your latest sentence.` : null, "error");
    round.announce(page.text);
  });
}

/** A failure no round is waiting for (the gradients asked again later): said in the status line. */
function sayIfFailed(failure) {
  if (failure) say(`The gradient experiment failed (${failure}).`, "error");
}

// The server runs the models in the order asked: heaviest first (the catalogue lists the story's
// models from the lightest), so the quick ones are those left when the page redraws after the pause.
const heaviestFirst = (lab) => [...lab.catalog.names].reverse();

async function start() {
  const requests = new Requests(api.compare);
  const catalog = await loadCatalog((error) => say(`Could not list the models (${api.explain(error)}).`, "error"));
  if (!catalog) {
    requests.begin().announce($("source").value);
    return;
  }
  const page = new UrlState(location.search, catalog);
  $("numerics").textContent = catalog.numericsLine;
  const lab = { catalog, page, requests };
  const later = debounce(() => update(lab), PAUSE_MS);
  lab.composer = new Composer(page.text, catalog.limits.max_chars, (text) => {
    requests.ahead(lab.composer.problem(text) ? null : text, heaviestFirst(lab));
    later();
  }, () => update(lab));
  lab.cards = new TranslationCards(chapterRoot(4), { catalog, onChange: ({ model: name }) => {
    page.set({ model: name });
    lab.cards.select(name);
    lab.bleu.show(bucketOf(page.text), name);
    const before = lab.heads.model;
    lab.heads.follow(name);
    lab.headsLab.refresh();
    if (lab.heads.model !== before) lab.weighing.update(page.text.trim()); // chapter 9 measures the model it shows
  } });
  lab.cards.select(page.model);
  lab.bleu = new BleuChart(chapterRoot(4), { catalog });
  lab.scores = new ScoresView(chapterRoot(5), { catalog, page, onChange: (changes) => page.set(changes) });
  lab.alignment = new AlignmentView(chapterRoot(5), { catalog, onChange: ({ row }) => lab.scores.pick(row) });
  lab.heads = new HeadsView(chapterRoot(9), { catalog, page, onChange: (changes) => {
    page.set(changes);
    lab.headsLab?.refresh();
  } });
  const measureLater = debounce(() => {
    if (!lab.composer.problem(page.text)) lab.measuring.ask(page.text.trim()).then(sayIfFailed);
  }, MEASURE_PAUSE_MS);
  lab.gradients = new GradientsView(chapterRoot(3), { catalog, page, onChange: (changes) => {
    page.set(changes);
    if ("length" in changes) measureLater();
  } });
  lab.training = new TrainingView(chapterRoot(1), { catalog, page, onChange: (changes) => page.set(changes) });
  lab.training.load();
  lab.recurrence = new RecurrenceView(chapterRoot(2), { page, onChange: (changes) => page.set(changes) });
  lab.timing = new TimingView(chapterRoot(6), { catalog, page });
  lab.experiments = chapterExperiments(lab);
  lab.chapters = new Chapters(page);
  showLongLag(lab);
  showLiveTraining(lab);
  update(lab);
}

/** Chapter 4's live experiment: built from GET /api/train, run when the reader asks. */
async function showLiveTraining(lab) {
  const { page } = lab;
  try {
    const info = await api.trainInfo();
    lab.live = new LiveTraining(chapterRoot(4), { page, onChange: (changes) => page.set(changes), info });
  } catch (error) {
    const why = api.explain(error);
    const part = partsOf(chapterRoot(4));
    for (const id of ["live-loss", "live-accuracy", "live-reference"]) showEmpty(part(id), `The live experiment is not available (${why}).`);
    part("live-start").disabled = true;
  }
}

/** Every chapter's experiment on the text in the box (POST /api/recurrence, /api/gradients, /api/scaling, ...). */
function chapterExperiments(lab) {
  const { catalog, page, requests } = lab;
  const onChange = (changes) => page.set(changes);
  const reading = new Experiment(lab.recurrence, { what: "recurrence", missing: "no plain recurrent model is loaded" });
  // the length slider asks again within the round
  const measuring = lab.measuring = new Experiment(lab.gradients, { what: "gradient experiment", missing: null, within: () => requests.signal, late: sayIfFailed });
  const ordering = new Experiment(new OrderView(chapterRoot(8), { page, onChange, ask: () => ordering.ask(page.text.trim()) }), { what: "order experiment" });
  lab.headsLab = new HeadsLab(chapterRoot(9), { page, onChange, heads: lab.heads, ask: () => weighing.ask(page.text.trim()) });
  const weighing = lab.weighing = new Experiment(lab.headsLab, { what: "heads experiment" });
  // a changed model, beam or prefix searches the sentence last searched
  const predicting = new Experiment(new PredictView(chapterRoot(10), { catalog, page, onChange, ask: () => predicting.ask() }), { what: "prediction" });
  const aligning = new Scrubber(chapterRoot(5), { page, onChange, candidates: catalog.aligning, key: "astep" });
  const learning = new Scrubber(chapterRoot(9), { page, onChange, candidates: catalog.withHeads, key: "hstep" });
  return [
    measuring,
    reading,
    aligning,
    learning,
    predicting,
    weighing,
    ordering,
    new Experiment(new ScalingView(chapterRoot(7)), { what: "scaling experiment" }),
    new Experiment(new RecapView(chapterRoot(11)), { what: "recap" }),
  ];
}

/** The long-lag experiment: its results once (they ship with the checkpoints), its figures when near. */
async function showLongLag(lab) {
  const { page } = lab;
  try {
    const results = await api.longLag();
    const view = new LongLagView(chapterRoot(3), { page, onChange: (changes) => page.set(changes), results });
    page.set(view.state);
    lab.gradients.setLongLag(results);
    whenNear(view.anchor, () => view.draw());
  } catch (error) {
    const why = error instanceof api.ApiError && error.status === 404 ? "this server has no long-lag results" : api.explain(error);
    const part = partsOf(chapterRoot(3));
    for (const id of ["lag-accuracy", "lag-gradients"]) showEmpty(part(id), `The long-lag experiment is not available (${why}).`);
  }
}

// A shared chapter link opens on that chapter's figures: Plotly is fetched now, while the
// catalogue loads, instead of by the first figure drawn.
if (new URLSearchParams(location.search).has("ch")) loadPlotly().catch(() => {});
start();
