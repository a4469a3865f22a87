// Predict, then see. Before a chapter shows its measurement, the reader may answer a question about
// it (questions/<slug>.js); the chapter's figures and prose wait behind it (`data-reveal`, hidden) until
// the answer, which is then compared with what the server measured on the reader's own sentence.
// "Ask me first" is the first visit's choice; "Just show me" shows every chapter at once. The choice
// stays in this browser (localStorage) and answers never leave it: nothing here sends a guess.
// A teacher's link (`?tour=gradients,attention,order&ask=1`, url-state.js) keeps only those chapters, in that order,
// with the questions on; the navigation follows it.
import { explain } from "./api.js";
import { chapterNumber, chapterRoot, el } from "./dom.js";
import { label, listOf, t } from "./i18n.js";
import * as store from "./store.js";

const STORED = "attentionLab.questions"; // "ask" or "show"

/** The reader's stored choice: true to be asked first (also the first visit's), false to be shown. */
function storedChoice() {
  try {
    return localStorage.getItem(STORED) !== "show";
  } catch {
    return true; // storage refused (a private window's policy): ask, as on a first visit
  }
}

const A_YEAR_S = 365 * 24 * 3600;

/** The server reads the choice too: the first screen's question is written hidden or shown as it will be. */
function tellServer(asking) {
  document.cookie = `questions=${asking ? "ask" : "show"}; Path=/; Max-Age=${A_YEAR_S}; SameSite=Lax`;
}

function remember(asking) {
  tellServer(asking);
  try {
    localStorage.setItem(STORED, asking ? "ask" : "show");
  } catch {
    // not remembered: the choice still holds on this page
  }
}

/** Keep only the tour's chapters, in its order: the sections in <main> and the links in the navigation. */
function followTour(tour) {
  if (!tour.length) return;
  const sections = [...document.querySelectorAll("main section[data-chapter]")];
  for (const section of sections) section.hidden = !tour.includes(section.dataset.chapter);
  // last in <main>, in the tour's order: the last of them keeps the room below it (app.css)
  for (const ch of tour) sections[0].parentElement.append(sections.find((s) => s.dataset.chapter === ch));
  const items = [...document.querySelectorAll(".site-nav a[data-chapter]")].map((a) => a.closest("li"));
  const list = items[0].parentElement;
  for (const item of items) item.hidden = !tour.includes(item.querySelector("a").dataset.chapter);
  for (const ch of tour) list.append(items.find((li) => li.querySelector("a").dataset.chapter === ch));
  label(list.parentElement, "tour.nav", { chapters: listOf(tour.map(chapterNumber)) }, "aria-label");
  document.body.dataset.tour = tour.join(",");
}

/** Everything of chapter `root` after its head, in one wrapper that the question can hide (the template's, where it wrote one). */
function wrapReveal(root) {
  const written = root.querySelector(".question-reveal");
  if (written) return written;
  const inner = root.querySelector(".wrap") || root;
  const head = inner.querySelector(".chapter__head");
  const reveal = el("div", "question-reveal");
  reveal.dataset.reveal = root.dataset.chapter;
  const rest = [...inner.children].filter((child) => child !== head);
  reveal.append(...rest);
  inner.append(reveal);
  return reveal;
}

/**
 * One chapter's question: its card, what it hides, its answer for the sentence it was posed on. It
 * is a view of the page's one request lifecycle (requests.js): its measurement is asked, retried,
 * aborted and superseded like any figure's, once its card is near the screen.
 */
class Question {
  constructor(spec, context, questions) {
    Object.assign(this, { spec, context, questions });
    const root = chapterRoot(spec.chapter);
    this.root = root;
    // how it is posed is its chapter's (app/chapters.py's `question`, written on the section)
    this.fixed = root.dataset.posed === "fixed"; // the same for every sentence: posed once
    this.later = root.dataset.posed === "later"; // the same for every sentence, measured once guessed
    this.key = spec.chapter;
    this.reveal = wrapReveal(root);
    this.card = el("section", "question");
    this.card.dataset.question = this.key;
    this.card.dataset.testid = `question-${this.key}`;
    label(this.card, "q.heading", { chapter: chapterNumber(spec.chapter) }, "aria-label");
    this.kicker = label(el("p", "question__kicker"), "q.kicker");
    this.prompt = el("p", "question__prompt");
    this.prompt.id = `question-${this.key}-prompt`;
    this.choices = el("div", "question__choices");
    this.choices.setAttribute("role", "group");
    this.choices.setAttribute("aria-labelledby", this.prompt.id);
    this.result = el("p", "question__result");
    this.result.dataset.testid = `question-${this.key}-result`;
    this.result.setAttribute("aria-live", "polite");
    this.result.hidden = true;
    this.result.tabIndex = -1; // the keyboard lands on the comparison once the guess is made
    this.skip = label(el("button", "question__skip"), "q.skip");
    this.skip.type = "button";
    this.skip.addEventListener("click", () => this.pass());
    this.again = label(el("button", "question__skip question__again"), "q.again");
    this.again.type = "button";
    this.again.dataset.testid = `question-${this.key}-again`;
    this.again.hidden = true;
    this.again.addEventListener("click", () => this.askAgain());
    this.card.append(this.kicker, this.prompt, this.choices, this.result, this.skip, this.again);
    const written = root.querySelector("[data-question]"); // the template's, of the same build
    if (written) written.replaceWith(this.card);
    else this.reveal.before(this.card);
    this.lab = null; // the request lifecycle's hands, once mounted
    this.text = null; // the sentence the question was posed for
    this.seen = false; // answered or skipped: the chapter stays shown through new sentences
    this.pending = undefined; // a guess waiting for its measurement (a question asked before it)
    this.clear();
  }

  /** The question as a view of the request lifecycle (contents.js's shape). */
  get view() {
    const q = this;
    return {
      chapter: q.spec.chapter,
      title: "question",
      figures: [],
      // a question of the sentence follows each new text; one asked before its measurement, on the guess
      asks: q.later ? "self" : "text",
      mount: (lab) => { q.lab = lab; },
      keys: () => [null],
      panels: () => [q.prompt],
      wants: () => q.questions.asking && !q.seen && !(q.fixed && q.posed),
      ask: (text, signal) => q.measure(text, signal),
      draw: (answer) => q.measured(answer),
      failure: (error) => q.failed(error),
      describe: () => null,
      rows: () => null,
      name: () => t("q.heading", { chapter: chapterNumber(q.spec.chapter) }),
    };
  }

  /** A fresh card: no measurement, no choices, no result. */
  clear() {
    this.posed = null;
    this.answer = undefined;
    this.guess = undefined;
    this.choices.replaceChildren();
    this.result.hidden = true;
    this.result.textContent = "";
    delete this.result.dataset.verdict;
    delete this.result.dataset.measured;
    this.again.hidden = true;
  }

  /** The sentence is now `text`: an unanswered question follows it; an answered one stays, and offers to ask again. */
  follow(text) {
    if (this.seen) {
      this.again.hidden = this.fixed || this.later || text === this.text;
      return;
    }
    if (this.fixed && this.posed) return;
    this.text = text;
    this.clear();
    this.reveal.hidden = true;
    this.hideVerdict(true);
    this.skip.hidden = false;
    if (this.later) {
      this.offer(this.spec.ask(this.context));
      return;
    }
    label(this.prompt, "q.measuring");
  }

  /** The request: the chapter's own measurement of `text` (a question asked before it: of none). */
  measure(text, signal) {
    if (!this.later) this.text = text;
    return this.spec.measure(this.text, this.context, signal);
  }

  /** The measurement came: the question posed from it, or the guess waiting for it compared. */
  measured(answer) {
    if (answer === this.answer) return; // drawn again (a switch of language): relabel() rewrites it
    this.answer = answer; // kept: the question is written again in another language from it
    this.posed = this.spec.pose(answer, this.context);
    if (this.pending !== undefined) {
      const guess = this.pending;
      this.pending = undefined;
      if (this.posed) this.compare(guess);
      return;
    }
    this.choices.replaceChildren();
    if (!this.posed) {
      label(this.prompt, "q.nothing");
      this.open();
      return;
    }
    this.offer(this.posed);
  }

  /** A question that cannot be asked never hides the chapter; said in its prompt (the lifecycle writes it there). */
  failed(error) {
    this.pending = undefined;
    this.open();
    return t("q.failed", { why: explain(error) });
  }

  /** The question and its choices, as buttons. */
  offer({ prompt, choices }) {
    delete this.prompt.dataset.i18n;
    this.prompt.classList.remove("is-missing");
    this.prompt.textContent = prompt;
    for (const choice of choices) {
      const button = el("button", "question__choice", choice.label);
      button.type = "button";
      button.dataset.choice = choice.id;
      if (choice.lang) button.lang = choice.lang;
      button.addEventListener("click", () => this.choose(choice.id));
      this.choices.append(button);
    }
  }

  /** The reader's guess. Nothing is sent anywhere; a question asked before its measurement measures now. */
  choose(id) {
    if (!this.posed && this.later) {
      this.pending = id;
      for (const button of this.choices.querySelectorAll("button")) button.disabled = true;
      label(this.result, "q.measuring.later");
      this.result.hidden = false;
      this.lab.ask();
      return;
    }
    if (this.posed) this.compare(id);
  }

  /** The guess against the measurement; the chapter shown, and kept shown. */
  compare(id) {
    const posed = this.posed;
    const verdict = id === posed.right ? "right" : posed.close.has(id) ? "close" : "wrong";
    this.guess = id;
    for (const button of this.choices.querySelectorAll("button")) {
      button.disabled = true;
      button.classList.toggle("is-guess", button.dataset.choice === id);
      button.classList.toggle("is-right", button.dataset.choice === posed.right);
    }
    this.result.dataset.verdict = verdict;
    this.result.dataset.measured = String(posed.measured);
    delete this.result.dataset.i18n;
    this.result.textContent = t("q.result", { verdict: t(`q.verdict.${verdict}`), says: posed.says(id) });
    this.result.hidden = false;
    this.questions.progress(this.spec.chapter, verdict); // the navigation marks the chapter
    this.open();
    this.seen = true;
    this.questions.told();
    this.result.focus({ preventScroll: true });
  }

  /** "Show me without guessing": shown, and kept shown like an answered chapter. */
  pass() {
    this.lab?.stop();
    this.open();
    this.seen = true;
    this.questions.told();
  }

  /** "Ask me again with this sentence": the question of the sentence in the box now, the chapter hidden until answered. */
  askAgain() {
    this.seen = false;
    this.follow(this.questions.latest);
    this.questions.told();
    this.lab.ask({ lazy: true });
  }

  /**
   * The question in the page's language now (after a switch): its prompt, its choices and, once
   * answered, the comparison, written again from the same measurement; the guess and what is shown stay.
   */
  relabel() {
    if (this.answer !== undefined) this.posed = this.spec.pose(this.answer, this.context);
    const shown = this.later && !this.posed ? this.spec.ask(this.context) : this.posed;
    if (shown && this.choices.children.length) {
      this.prompt.textContent = shown.prompt;
      for (const choice of shown.choices) {
        const button = [...this.choices.children].find((b) => b.dataset.choice === String(choice.id));
        if (button) button.textContent = choice.label;
      }
    }
    const verdict = this.result.dataset.verdict;
    if (verdict && this.posed && this.guess !== undefined) this.result.textContent = t("q.result", { verdict: t(`q.verdict.${verdict}`), says: this.posed.says(this.guess) });
  }

  /** Show the chapter (answered, skipped, or not askable). */
  open() {
    this.reveal.hidden = false;
    this.hideVerdict(false);
    this.skip.hidden = true;
  }

  /**
   * A claim that states the question's answer marks that part (`data-verdict` in its message): hidden
   * while the question waits, by an attribute of the section, so that the message rewritten in another
   * language stays hidden too (questions.css).
   */
  hideVerdict(hidden) {
    this.root.toggleAttribute("data-verdict-hidden", hidden);
  }

  /** "Just show me": the card steps aside and the chapter shows. */
  showAll() {
    this.lab?.stop();
    this.card.hidden = true;
    this.open();
  }
}

/**
 * The questions of the chapters whose section is posed (`data-posed`, from app/chapters.py's record),
 * in the story's order: each chapter's is the default export of static/js/questions/<slug>.js.
 */
export async function loadQuestions() {
  const slugs = [...document.querySelectorAll("main section[data-posed]")].map((section) => section.dataset.chapter);
  return Promise.all(slugs.map((slug) => import(`./questions/${slug}.js`).then((module) => module.default)));
}

export class Questions {
  /** `context`: {catalog, page}; the page's `tour` and `ask` come from its URL; `specs`: loadQuestions()'s. */
  constructor(context, specs) {
    const { page } = context;
    followTour(page.tour);
    this.asking = page.ask || storedChoice();
    if (!page.ask) tellServer(this.asking); // a choice stored before the cookie existed
    this.latest = null;
    this.list = specs.filter((spec) => chapterRoot(spec.chapter)?.dataset.posed).map((spec) => new Question(spec, context, this));
    this.toggle = this.buildToggle();
    store.watch("text", (text) => this.follow(text));
    if (!this.asking) for (const q of this.list) q.showAll();
    this.told();
  }

  /** The questions as views of the request lifecycle, for Lab.mount. */
  get views() {
    return this.list.map((q) => q.view);
  }

  /** A new sentence: each question follows it (an answered one stays answered). */
  follow(text) {
    const trimmed = (text || "").trim();
    this.latest = trimmed;
    if (!this.asking) return;
    for (const q of this.list) {
      q.card.hidden = false;
      if (trimmed) q.follow(trimmed);
      else q.showAll();
    }
    this.told();
  }

  /** Which chapters the reader may see the measurements of (store `revealed`: the recap reads it). */
  told() {
    const hidden = this.asking ? this.list.filter((q) => !q.seen).map((q) => q.spec.chapter) : [];
    store.set("revealed", { hidden: new Set(hidden) });
  }

  /** The two choices, in the composer: ask me first / just show me. The template writes them, so
   * that the first paint keeps their room (nothing below moves); made here only where it did not. */
  buildToggle() {
    const written = document.querySelector("fieldset.question-mode");
    if (written) {
      for (const input of written.querySelectorAll("input[name=question-mode]")) {
        input.checked = (input.value === "ask") === this.asking;
        input.addEventListener("change", () => this.choose(input.value === "ask"));
      }
      return written;
    }
    const box = el("fieldset", "segmented question-mode");
    box.dataset.testid = "question-mode";
    box.append(label(el("legend", "toolbar__label"), "q.mode"));
    for (const [value, key] of [["ask", "q.mode.ask"], ["show", "q.mode.show"]]) {
      const choice = el("label");
      const input = el("input");
      Object.assign(input, { type: "radio", name: "question-mode", value, checked: (value === "ask") === this.asking });
      input.dataset.testid = `question-mode-${value}`;
      input.addEventListener("change", () => this.choose(value === "ask"));
      choice.append(input, label(el("span"), key));
      box.append(choice);
    }
    const foot = document.querySelector(".composer__foot") || document.querySelector("main");
    foot.append(box);
    return box;
  }

  /** Every question in the page's language now, and the navigation's marks again (its links were rewritten). */
  relabel() {
    for (const q of this.list) {
      q.relabel();
      if (q.result.dataset.verdict) this.progress(q.spec.chapter, q.result.dataset.verdict);
    }
  }

  /** The reader's choice, remembered in this browser only. */
  choose(asking) {
    remember(asking);
    this.asking = asking;
    if (!asking) {
      for (const q of this.list) q.showAll();
      this.told();
      return;
    }
    // asked from now on, for the chapters not answered yet
    for (const q of this.list) {
      q.card.hidden = false;
      if (q.seen || !this.latest) continue;
      q.follow(this.latest);
      if (!q.later && !(q.fixed && q.posed)) q.lab?.ask({ lazy: true });
    }
    this.told();
  }

  /** The chapter's link in the navigation says how the reader's guess went. */
  progress(chapter, verdict) {
    const link = document.querySelector(`.site-nav a[data-chapter="${chapter}"]`);
    if (!link) return;
    let mark = link.querySelector(".site-nav__progress");
    if (!mark) {
      mark = el("span", "site-nav__progress");
      link.append(mark);
    }
    mark.dataset.progress = verdict;
    mark.textContent = t(`q.nav.${verdict}`);
  }
}
