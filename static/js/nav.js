// The chapters: the nav lists them, the URL says which one is in view (`ch`), and a shared link
// opens on it. Moving to a chapter needs nothing more: its plots are drawn as they come near the
// screen (lazy.js), for the sentence in the box.

const SETTLED_PX = 2; // a page scrolled further than this, with a chapter held, was scrolled by the reader

const pageHeight = () => document.documentElement.scrollHeight;

export class Nav {
  /**
   * `page`: the URL state; its `ch` is opened now (a shared link) and kept as the reader scrolls.
   * `keeper`: what keeps the page still; a jump tells it what the reader now looks at.
   */
  constructor(page, keeper) {
    this.page = page;
    this.keeper = keeper;
    this.sections = [...document.querySelectorAll("section[data-chapter]")];
    this.held = null; // the chapter the reader asked for, and where its top was put
    for (const link of document.querySelectorAll("a[data-chapter]")) {
      link.addEventListener("click", (event) => {
        event.preventDefault();
        this.go(link.dataset.chapter, true);
      });
    }
    this.holdWhileDrawing();
    if (page.ch) this.go(page.ch, false);
    this.mark(page.ch);
    // the chapter crossing a line a third of the way down the screen is the one being read
    const observer = new IntersectionObserver((entries) => {
      if (this.held) return;
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
    this.place(section);
    if (focus) section.querySelector("h2").focus({ preventScroll: true });
    this.page.set({ ch });
    this.mark(ch);
  }

  place(section) {
    section.scrollIntoView({ block: "start", behavior: "instant" });
    // the browser's scroll anchoring would move the page too, by its own choice of anchor
    document.documentElement.style.overflowAnchor = "none";
    this.held = { section, top: section.getBoundingClientRect().top, y: scrollY, height: pageHeight() };
    this.keeper.holdHere(section.querySelector("h2"));
  }

  letGo() {
    if (!this.held) return;
    this.held = null;
    document.documentElement.style.overflowAnchor = "";
  }

  /**
   * Plots drawn after a jump (lazily, as they come near the screen) change the heights above and
   * inside the chapter the reader asked for, which would push it down the screen, or out of it.
   * Until the reader scrolls on their own, that chapter is put back at the top after each change
   * of height and stays the one marked. The reader's wheel, touch, keys and clicks let it go at
   * once; a scroll that no placing made (the scrollbar dragged) lets it go too.
   */
  holdWhileDrawing() {
    const hold = () => {
      if (this.held) this.place(this.held.section);
    };
    const sizes = new ResizeObserver(hold);
    sizes.observe(document.querySelector("main"));
    for (const section of this.sections) sizes.observe(section);
    for (const type of ["wheel", "touchstart", "pointerdown", "keydown"]) {
      addEventListener(type, () => this.letGo(), { passive: true, capture: true });
    }
    // a scroll that comes with a new height of the page is the browser's (the page got shorter than
    // where it was: the questions hid the chapters they wait before), not the reader's
    addEventListener("scroll", () => {
      if (!this.held) return;
      if (pageHeight() !== this.held.height) hold();
      else if (Math.abs(scrollY - this.held.y) > SETTLED_PX) this.letGo();
      else if (Math.abs(this.held.section.getBoundingClientRect().top - this.held.top) > SETTLED_PX) hold();
    }, { passive: true });
  }

  mark(ch) {
    for (const link of document.querySelectorAll(".site-nav a[data-chapter]")) {
      if (link.dataset.chapter === ch) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    }
  }
}
