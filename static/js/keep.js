// The page never moves under the reader. Answers arrive, panels are drawn, questions are posed and
// answered, the language changes: heights change above what the reader is looking at, and the
// page would carry it away. The browser's own scroll anchoring is off (app.css): it anchors on the
// first element at the top of the screen, which is hidden behind the stuck text box and often the
// very thing that changed. Here the anchor is what the reader sees: the text box while it is in the
// page's flow; else the heading of the chapter in view when it is on the screen; else the first
// block of that chapter below the box. After every change of size it is put back where it was.
// A scroll the reader makes (wheel, keys, scrollbar, a link) picks the anchor again.
import { $ } from "./dom.js";

const BLOCKS = "h2, h3, p, figure, .plot, .panel, .question, .toolbar, table, .card, li";
const MOVED_PX = 0.5; // less is rounding, not a move

const shown = (node) => node && node.getClientRects().length > 0;

export class Keeper {
  constructor() {
    this.composer = $("composer");
    this.sections = [...document.querySelectorAll("main section[data-chapter]")];
    this.anchor = null; // {node, top, heading, headingTop}: what is held, and where on the screen
    this.placed = null; // the scrollY this keeper put the page at, while no one else scrolled
    this.picking = 0;
    addEventListener("scroll", () => this.scrolled(), { passive: true });
    const sizes = new ResizeObserver(() => this.restore());
    sizes.observe($("main"));
    for (const section of this.sections) sizes.observe(section);
    this.pick();
  }

  /** The line under the stuck text box (0 when it is in the flow); null: the box itself is the anchor. */
  line() {
    if (!this.stuck) return null;
    return this.composer.getBoundingClientRect().bottom;
  }

  /**
   * What the reader is looking at now: the first heading or block that starts on the screen below the
   * line, in the first chapter that reaches below it. A chapter of which only a sliver shows above the
   * next one is passed over: what the reader sees there is the next chapter's heading.
   */
  pick() {
    const line = this.line();
    if (line === null) {
      this.hold($("source"), null);
      return;
    }
    this.anchor = null;
    for (const section of this.sections) {
      if (!shown(section)) continue;
      const { top, bottom } = section.getBoundingClientRect();
      if (bottom <= line) continue;
      if (top >= innerHeight) return;
      const heading = section.querySelector("h2");
      const at = heading.getBoundingClientRect().top;
      if (at >= line - 1 && at < innerHeight) {
        this.hold(heading, heading);
        return;
      }
      for (const node of section.querySelectorAll(BLOCKS)) {
        if (!shown(node)) continue;
        const box = node.getBoundingClientRect();
        if (box.top >= line && box.top < innerHeight) {
          this.hold(node, heading);
          return;
        }
      }
      if (bottom >= innerHeight) { // one block fills the screen: the chapter itself holds
        this.hold(section, heading);
        return;
      }
    }
  }

  /** The page was put somewhere on purpose (a jump to a chapter): hold `heading`, its chapter's, there. */
  holdHere(heading) {
    this.hold(heading, heading);
    this.placed = scrollY;
  }

  hold(node, heading) {
    const top = node.getBoundingClientRect().top;
    this.anchor = { node, top, heading, headingTop: heading ? heading.getBoundingClientRect().top : top, stuck: this.stuck };
  }

  get stuck() {
    return this.composer.classList.contains("is-stuck");
  }

  /** A scroll: the keeper's own is let be; anyone else's picks the anchor again (once a frame). */
  scrolled() {
    if (this.placed !== null && Math.abs(scrollY - this.placed) <= MOVED_PX) return;
    this.placed = null;
    if (this.picking) return;
    this.picking = requestAnimationFrame(() => {
      this.picking = 0;
      this.pick();
    });
  }

  /** Sizes changed: scroll by as much as the anchor moved, so that it is where it was. */
  restore() {
    const anchor = this.anchor;
    if (!anchor) return;
    if (anchor.stuck !== this.stuck) { // the box stuck or came loose since: what the reader sees is another thing
      this.pick();
      return;
    }
    if (!shown(anchor.node)) { // hidden by the change (a panel taken away): its chapter's heading holds instead
      if (!anchor.heading || !shown(anchor.heading)) return;
      Object.assign(anchor, { node: anchor.heading, top: anchor.headingTop });
    }
    const moved = anchor.node.getBoundingClientRect().top - anchor.top;
    if (Math.abs(moved) <= MOVED_PX) return;
    const before = scrollY;
    scrollBy({ top: moved, behavior: "instant" });
    this.placed = scrollY;
    if (scrollY === before) this.placed = null;
  }
}
