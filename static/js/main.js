// The page: the text box, and the list of chapter views it drives (contents.js). What the server
// serves (catalog.js) and what the URL says (url-state.js) build the views; each edit asks the
// server at once, and after a pause in typing every view is asked about the new text, each round
// replacing the last (requests.js). Nothing here knows one chapter from another. The page's
// language is the one the server wrote it in (<html lang>: ?lang=, else the reader's last choice,
// else Accept-Language, else English); the switch changes it in place (language-switch.js).
import * as api from "./api.js";
import { loadCatalog } from "./catalog.js";
import { language, pageLanguage, t, useLanguage } from "./i18n.js";
import { Composer, say, sayAgain } from "./composer.js";
import { startContrast } from "./contrast.js";
import { loadViews } from "./contents.js";
import { $ } from "./dom.js";
import { Embed, offerEmbeds } from "./embed.js";
import { Keeper } from "./keep.js";
import { languageSwitch } from "./language-switch.js";
import { Nav } from "./nav.js";
import { loadPlotly } from "./plots.js";
import { loadQuestions, Questions } from "./questions.js";
import { Lab } from "./requests.js";
import { UrlState } from "./url-state.js";

// The views change after this pause in typing. Long enough for every model's answer (asked at the
// keystroke, speculate.js) to be in when it ends, so the views change once and together; short
// enough that the page follows the reader within a tenth of a second (bench/README.md, bench_page.py).
const PAUSE_MS = 70;
window.attentionLab.pauseMs = PAUSE_MS; // for the benchmark's split of keystroke -> update

function debounce(fn, ms) {
  let timer = 0;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

/** One round for the text in the box: every view asked about it, then the announcement. */
function update({ lab, page, composer }) {
  page.setSoon({ text: composer.text });
  const round = lab.begin();
  const text = page.text;
  if (composer.problem(text)) {
    say(() => composer.problem(text), text.trim() ? "warn" : "info");
    round.announce(page.text);
    return;
  }
  const tell = (failures) => say(() => (failures.length
    ? t("status.views-failed", { failures: failures.join(t("list.separator")) }) : null), "error");
  round.update(page.text, tell).then(() => round.announce(page.text));
}

async function start() {
  const lab = new Lab(api.compare);
  const state = { lab };
  languageSwitch(state);
  const [catalog, , views, questions] = await Promise.all([
    loadCatalog((error) => say(() => t("status.no-models", { why: api.explain(error) }), "error")),
    useLanguage(pageLanguage()).catch(() => "en"), // a missing catalogue leaves the words as the server wrote them
    loadViews(),
    document.body.dataset.embed ? [] : loadQuestions(),
  ]);
  sayAgain(); // a failure said while the catalogue was still on its way, now in words
  if (!catalog) {
    lab.begin().announce($("source").value);
    return;
  }
  const page = new UrlState(location.search, catalog, language(), views.map((view) => view.state));
  $("numerics").textContent = catalog.numericsLine;
  Object.assign(state, { page, catalog });
  const later = debounce(() => update(state), PAUSE_MS);
  state.composer = new Composer(page.text, catalog.limits.max_chars, (text) => {
    lab.ahead(state.composer.problem(text) ? null : text);
    later();
  }, () => update(state));
  // an embedded figure (/embed/<id>) builds its own chapter's views only, and asks nothing first
  const embed = document.body.dataset.embed ? new Embed(document.body.dataset.embed, page) : null;
  if (embed && !embed.ok) return;
  if (!embed) {
    state.questions = new Questions({ catalog, page }, questions);
    offerEmbeds();
  }
  lab.mount(embed ? embed.views(views) : [...views, ...state.questions.views], { catalog, page });
  if (!embed) {
    new Nav(page, new Keeper());
  }
  update(state);
}

startContrast(); // before the first figure is drawn

// A shared chapter link opens on that chapter's figures: Plotly is fetched now, while the
// catalogue loads, instead of by the first figure drawn.
if (new URLSearchParams(location.search).has("ch")) loadPlotly().catch(() => {});
start();
