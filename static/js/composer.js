// The text box and what the page says back: the character count against the server's limit,
// the example sentences, and the status line.
import { $ } from "./dom.js";
import { t } from "./i18n.js";

export class Composer {
  /**
   * `onEdit(text)` at every keystroke; `onExample(text)` when an example replaces the text.
   * `maxChars`: the server's limit (GET /api/health).
   */
  constructor(text, maxChars, onEdit, onExample) {
    this.box = $("source");
    this.maxChars = maxChars;
    this.box.value = text;
    this.showCount();
    this.box.addEventListener("input", () => {
      this.showCount();
      onEdit(this.box.value);
    });
    for (const chip of document.querySelectorAll("[data-example]")) {
      chip.addEventListener("click", () => {
        this.box.value = chip.dataset.example;
        this.showCount();
        onExample(this.box.value);
        this.box.focus();
      });
    }
    new IntersectionObserver(([entry]) => this.stick(!entry.isIntersecting)).observe($("composer-sentinel"));
  }

  /**
   * The composer sticks to the top, and sheds its hints while stuck. The height it
   * sheds is kept below it as margin, so the page under it does not move: were it to move up, the
   * browser's scroll anchoring would scroll back by as much, which can unstick the composer, which
   * grows back and scrolls the page down again, forever (a reader near that point saw the page shake).
   */
  stick(stuck) {
    const composer = $("composer");
    if (stuck === composer.classList.contains("is-stuck")) return;
    const height = () => composer.getBoundingClientRect().height;
    const before = height();
    // the margin first: a page at its end that got shorter for the measure would be scrolled up by the browser
    if (stuck) composer.style.marginBottom = `${before}px`;
    composer.classList.toggle("is-stuck", stuck);
    composer.style.marginBottom = stuck ? `${Math.max(0, before - height())}px` : "";
  }

  get text() {
    return this.box.value;
  }

  /** Why the models cannot take `text`, for the status line; null when they can. */
  problem(text) {
    const trimmed = text.trim();
    if (!trimmed) return t("status.empty");
    if (trimmed.length > this.maxChars) return t("status.too-long", { count: trimmed.length, max: this.maxChars });
    return null;
  }

  showCount() {
    const n = this.box.value.trim().length;
    const count = $("char-count");
    count.textContent = t("composer.count", { n, max: this.maxChars });
    count.classList.toggle("is-over", n > this.maxChars);
  }
}

let saying = () => null; // the status line's message, in the page's language now

/** Show `message` in the status line (null: hide it); a function of no arguments is asked again by `sayAgain`. */
export function say(message, tone = "info") {
  saying = typeof message === "function" ? message : () => message;
  const status = $("status");
  const words = saying();
  status.hidden = !words;
  status.dataset.tone = tone;
  status.textContent = words || "";
}

/** The status line again, in the page's language now. */
export function sayAgain() {
  const status = $("status");
  say(saying, status.dataset.tone);
}

