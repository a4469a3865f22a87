// The text box and what the page says back: the character count against the server's limit,
// the example sentences, and the status line.
import { $ } from "./dom.js";

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
   * The composer sticks to the top on wide screens, and sheds its hints while stuck. The height it
   * sheds is kept below it as margin, so the page under it does not move: were it to move up, the
   * browser's scroll anchoring would scroll back by as much, which can unstick the composer, which
   * grows back and scrolls the page down again, forever (a reader near that point saw the page shake).
   */
  stick(stuck) {
    const composer = $("composer");
    if (stuck === composer.classList.contains("is-stuck")) return;
    const height = () => composer.getBoundingClientRect().height;
    const before = height();
    composer.classList.toggle("is-stuck", stuck);
    composer.style.marginBottom = stuck ? `${Math.max(0, before - height())}px` : "";
  }

  get text() {
    return this.box.value;
  }

  /** Why the models cannot take `text`, for the status line; null when they can. */
  problem(text) {
    const trimmed = text.trim();
    if (!trimmed) return "Type a French sentence and every model below will translate it.";
    if (trimmed.length > this.maxChars) {
      return `That is ${trimmed.length} characters; the models take at most ${this.maxChars}. Shorten it and the views will update.`;
    }
    return null;
  }

  showCount() {
    const n = this.box.value.trim().length;
    const count = $("char-count");
    count.textContent = `${n} / ${this.maxChars}`;
    count.classList.toggle("is-over", n > this.maxChars);
  }
}

/** Show `message` in the status line (null: hide it). */
export function say(message, tone = "info") {
  const status = $("status");
  status.hidden = !message;
  status.dataset.tone = tone;
  status.textContent = message || "";
}

