// One figure for another site: `/embed/<figure id>?<the page's state>` (app/routes/pages.py) serves
// the page's own template and code, and here everything but that figure steps aside: its chapter's
// views are built and asked as on the page (requests.js), the figure keeps its sentence twin
// (twins.js, shown here rather than kept for screen readers), and a header gives its title, the
// reader's sentence and a link back to the whole chapter. On the page, every figure the template
// names offers "Embed" with the <iframe> snippet, for the page's state of the moment.
import { $, chapterNumber, el } from "./dom.js";
import { label, t } from "./i18n.js";

/** The page's state as a query string for a shared figure: a tour's order and questions are the page's own. */
function stateQuery(extra = {}) {
  const q = new URLSearchParams(location.search);
  for (const key of ["tour", "ask"]) q.delete(key);
  for (const [key, value] of Object.entries(extra)) q.set(key, value);
  return q.toString();
}

const chapterOf = (node) => node.closest("section[data-chapter]");
const titleOf = (div) => (div.closest("figure")?.querySelector(".panel__title")
  || div.closest(".subchapter")?.querySelector(".subchapter__title")
  || chapterOf(div)?.querySelector("h2"))?.textContent.trim() || div.id;

/** What may be embedded: the figures the chapters declare (app/chapters.py), which the server writes on the page. */
const embeddable = () => document.body.dataset.figures.split(" ").map((id) => $(id)).filter(Boolean);

/** The page, reduced to the figure `id`: {views(all): the views to build} — or null when it is not on the page. */
export class Embed {
  constructor(id, page) {
    this.div = $(id);
    this.section = this.div && chapterOf(this.div);
    if (!this.section) {
      document.body.replaceChildren(el("p", "embed-missing", t("embed.missing", { figure: id })));
      return;
    }
    this.chapter = this.section.dataset.chapter;
    const keep = this.keep = this.div.closest("figure") || this.div;
    for (let node = keep; node && node !== document.body; node = node.parentElement) {
      for (const sibling of node.parentElement.children) {
        if (sibling !== node) sibling.classList.add("embed-hidden");
      }
    }
    const head = el("header", "embed-head");
    const chapterTitle = this.section.querySelector("h2")?.textContent.trim() || "";
    const title = el("h1", "embed-head__title", titleOf(this.div));
    const context = el("p", "embed-head__chapter", t("embed.chapter", { chapter: chapterNumber(this.chapter), title: chapterTitle }));
    this.sentence = el("p", "embed-head__sentence");
    this.sentence.dataset.testid = "embed-sentence";
    const link = el("a", "embed-head__link", t("embed.back"));
    link.href = `/?${stateQuery({ ch: this.chapter, text: page.text })}`;
    link.target = "_top";
    link.dataset.testid = "embed-back";
    head.append(title, context, this.sentence, link);
    document.body.prepend(head);
    this.link = link;
    this.page = page;
    this.showSentence(page.text);
  }

  get ok() {
    return Boolean(this.section);
  }

  /**
   * The views of its chapter (what the figure's view reads from a neighbour comes with it), each
   * with the kept figure's panels first: a view asks when its first panel comes near the screen
   * (requests.js), and the others are hidden here. A view without a panel in the figure never asks.
   */
  views(all) {
    const kept = (panel) => Boolean(panel) && this.keep.contains(panel);
    return all.filter((view) => String(view.chapter) === this.chapter).map((view) => ({
      ...view,
      panels: (key) => {
        const panels = view.panels(key);
        return [...panels.filter(kept), ...panels.filter((panel) => !kept(panel))];
      },
    }));
  }

  showSentence(text) {
    this.sentence.textContent = t("embed.sentence", { text: text.trim() });
    this.sentence.lang = "fr";
  }
}

/**
 * Every figure of the template: its "Embed" button, which the template writes in its caption (or, for
 * a pair of panels, just above it) so that no caption grows when this code arrives, here opens the
 * snippet to copy. Called before the views are built, so that the figures they add (one per model,
 * no id the server knows) are embedded with their pair.
 */
const offered = []; // [button, its figure]: their names said again in another language

/** The Embed buttons' names in the page's language now (each names its figure's title). */
export function relabelEmbeds() {
  for (const [button, div] of offered) button.setAttribute("aria-label", t("embed.offer-name", { title: titleOf(div) }));
}

export function offerEmbeds() {
  for (const div of embeddable()) {
    const button = document.querySelector(`[data-embed-for="${div.id}"]`);
    if (!button) continue;
    offered.push([button, div]);
    button.setAttribute("aria-label", t("embed.offer-name", { title: titleOf(div) }));
    const box = el("div", "embed-snippet");
    box.hidden = true;
    const named = label(el("label", "embed-snippet__label"), "embed.snippet");
    const code = el("textarea", "embed-snippet__code");
    code.readOnly = true;
    code.rows = 3;
    code.id = `embed-code-${div.id}`;
    code.dataset.testid = `embed-code-${div.id}`;
    named.htmlFor = code.id;
    const copy = label(el("button", "numbers"), "embed.copy");
    copy.type = "button";
    copy.addEventListener("click", () => {
      code.select();
      navigator.clipboard?.writeText(code.value).catch(() => {});
    });
    box.append(named, code, copy);
    button.addEventListener("click", () => {
      const open = box.hidden;
      if (open) code.value = snippet(div);
      box.hidden = !open;
      button.setAttribute("aria-expanded", String(open));
    });
    button.after(box);
  }
}

/** The <iframe> for `div` with the page's state now (the sentence in the box, the controls' settings). */
function snippet(div) {
  const src = `${location.origin}/embed/${encodeURIComponent(div.id)}?${stateQuery()}`;
  const title = titleOf(div).replace(/"/g, "&quot;");
  const safe = src.replace(/&/g, "&amp;").replace(/"/g, "&quot;");
  return `<iframe src="${safe}" title="${title}" width="760" height="640" style="border:0" loading="lazy"></iframe>`;
}
