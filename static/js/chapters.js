// The chapters: the nav lists them, the URL says which one is in view (`ch`), and a shared link
// opens on it. Moving to a chapter needs nothing more: its plots are drawn as they come near the
// screen (lazy.js), for the sentence in the box.

export class Chapters {
  /** `page`: the URL state; its `ch` is opened now (a shared link) and kept as the reader scrolls. */
  constructor(page) {
    this.page = page;
    this.sections = [...document.querySelectorAll("section[data-chapter]")];
    for (const link of document.querySelectorAll("a[data-chapter]")) {
      link.addEventListener("click", (event) => {
        event.preventDefault();
        this.go(link.dataset.chapter, true);
      });
    }
    if (page.ch) this.go(page.ch, false);
    this.mark(page.ch);
    // the chapter crossing a line a third of the way down the screen is the one being read
    const observer = new IntersectionObserver((entries) => {
      const seen = entries.find((entry) => entry.isIntersecting);
      if (seen && seen.target.dataset.chapter !== this.page.ch) {
        this.page.set({ ch: seen.target.dataset.chapter });
        this.mark(this.page.ch);
      }
    }, { rootMargin: "-33% 0px -66% 0px" });
    for (const section of this.sections) observer.observe(section);
  }

  /** Scroll to chapter `ch`; `focus`: move the keyboard there too (its heading). */
  go(ch, focus) {
    const section = this.sections.find((s) => s.dataset.chapter === ch);
    if (!section) return;
    section.scrollIntoView({ block: "start", behavior: "instant" });
    if (focus) section.querySelector("h2").focus({ preventScroll: true });
    this.page.set({ ch });
    this.mark(ch);
  }

  mark(ch) {
    for (const link of document.querySelectorAll(".site-nav a[data-chapter]")) {
      if (link.dataset.chapter === ch) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    }
  }
}
