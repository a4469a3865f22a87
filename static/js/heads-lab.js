// Chapter 9's experiments on the heads (POST /api/heads), wired: switch heads off and re-translate
// at once, the encoder's attention rollout, and linked views: hovering a token (in either text, or a
// row or column of a map) highlights it everywhere in the chapter; clicking source words sums their
// attention in the enlarged head. What the answer says (each head's contribution, the translation
// heads, the effect of the heads off, the prose) is drawn by heads-weighing.js.
import * as api from "./api.js";
import { el, partsOf } from "./dom.js";
import { whenNear } from "./lazy.js";
import { attentionTrace, baseLayout, draw, plotText, showEmpty, showToken, tokenAxis } from "./plots.js";
import { fillStory } from "./facts.js";
import { changedIndices, drawContributions, drawRanking, headsFacts, showEffect } from "./heads-weighing.js";
import { headline } from "./recap.js";
import { offKey } from "./url-state.js";

const HIGHLIGHT = "#e8542f";
/** Which text each axis of a map of each kind reads, and the offset of its first token there. */
const SIDES = { cross: { rows: ["target", 0], cols: ["source", 0] }, encoder: { rows: ["source", 0], cols: ["source", 0] },
  decoder: { rows: ["target", 0], cols: ["target", 1] } };

export class HeadsLab {
  /**
   * `root`: chapter 9's section; `page`: the URL state (off, rollout, sel), changed through
   * `onChange(changes)`; `heads`: the HeadsView (its model, kind, layer, head, answers); `ask()`:
   * measure again (a head was switched off or on).
   */
  constructor(root, { page, onChange, heads, ask }) {
    Object.assign(this, { heads, page, onChange, ask });
    this.$ = partsOf(root);
    this.anchor = this.$("heads-contrib"); // its nearness starts the experiment
    this.plots = [this.$("heads-contrib"), this.$("heads-ranking")];
    this.hover = null; // {side, index}
    this.answer = null;
    const toggle = this.$("heads-rollout-toggle");
    toggle.checked = page.rollout;
    toggle.addEventListener("change", () => {
      this.onChange({ rollout: toggle.checked });
      this.drawRollout();
    });
    this.$("heads-toggle").addEventListener("click", () => this.toggle({ kind: heads.kind, layer: heads.layer, head: heads.head }));
    for (const side of ["source", "target"]) {
      const strip = this.$(`heads-${side}`);
      strip.addEventListener("mouseover", (e) => e.target.dataset.index && this.highlight({ side, index: Number(e.target.dataset.index) }));
      strip.addEventListener("mouseleave", () => this.highlight(null));
    }
    this.$("heads-source").addEventListener("click", (e) => {
      if (!e.target.dataset.index) return;
      const index = Number(e.target.dataset.index);
      const sel = this.page.sel.includes(index) ? this.page.sel.filter((i) => i !== index) : [...this.page.sel, index].sort((a, b) => a - b);
      this.onChange({ sel });
      this.refresh();
    });
    for (const id of ["head-detail", "heads-rollout"]) this.hoverable(this.$(id), id === "heads-rollout" ? "encoder" : null);
  }

  /** Plotly hover on a map: its column's token (the map's kind says which text); bound once it is a plot. */
  hoverable(div, kind) {
    div.addEventListener("mouseenter", () => {
      if (div.dataset.hoverBound || !div.on) return;
      div.dataset.hoverBound = "1";
      div.on("plotly_hover", (event) => {
        const point = event.points && event.points[0];
        const k = kind || div.dataset.kind;
        if (!point || !SIDES[k]) return;
        const [side, offset] = SIDES[k].cols;
        this.highlight({ side, index: point.x - offset });
      });
    });
    // not plotly_unhover: redrawing the outline under the pointer unhovers it
    div.addEventListener("mouseleave", () => this.highlight(null));
  }

  /** A model's /api/compare answer: the enlarged head's views follow the HeadsView's model. */
  showAnswer(name) {
    if (name === this.heads.model) this.refresh();
  }

  get off() {
    return this.page.off;
  }

  toggle(h) {
    const key = offKey(h);
    const off = this.off.some((o) => offKey(o) === key) ? this.off.filter((o) => offKey(o) !== key) : [...this.off, h];
    this.onChange({ off });
    this.ask();
  }

  /** The heads of the model the HeadsView shows, with the URL's heads off. */
  call(text, signal) {
    return api.heads(text, this.heads.model, this.off, signal);
  }

  /** /api/heads answered for the text and the heads off. */
  show(answer) {
    this.answer = answer;
    fillStory(this.$("heads-story"), headsFacts(answer));
    const ranking = answer.alignment ? answer.alignment.ranking : [];
    if (ranking.length) headline(9, `the cross heads that align best with ${answer.alignment.reference}: ${headsFacts(answer).top}.`);
    this.showTexts(answer);
    showEffect(this.$("heads-effect"), answer);
    whenNear(this.$("heads-contrib"), () => drawContributions(this.$("heads-contrib"), answer, this.off, (h) => this.toggle(h)));
    whenNear(this.$("heads-ranking"), () => drawRanking(this.$("heads-ranking"), answer));
    this.refresh();
  }

  /** The HeadsView's selection or answer changed: the views that follow it. */
  refresh() {
    const key = offKey({ kind: this.heads.kind, layer: this.heads.layer, head: this.heads.head });
    const isOff = this.off.some((o) => offKey(o) === key);
    this.$("heads-toggle").textContent = isOff ? "Switch this head back on" : "Switch this head off";
    this.$("heads-toggle").setAttribute("aria-pressed", String(isOff));
    for (const span of this.$("heads-source").children) span.classList.toggle("token--selected", this.page.sel.includes(Number(span.dataset.index)));
    this.drawRollout();
    whenNear(this.$("heads-summed"), () => this.drawSummed());
  }

  showTexts(answer) {
    const strip = (id, tokens, marked) => this.$(id).replaceChildren(...tokens.map((t, i) => {
      const span = el(marked && marked.has(i) ? "mark" : "span", "token", showToken(t));
      span.dataset.index = String(i);
      span.tabIndex = 0;
      return span;
    }));
    strip("heads-source", answer.source_tokens);
    strip("heads-target", answer.target_tokens, changedIndices(answer));
  }

  /** Hover: the token outlined in both texts and every map of the chapter in view (shapes only). */
  highlight(hover) {
    this.hover = hover;
    for (const side of ["source", "target"]) {
      for (const span of this.$(`heads-${side}`).children) {
        span.classList.toggle("token--hover", !!hover && hover.side === side && Number(span.dataset.index) === hover.index);
      }
    }
    for (const [id, kind] of [["head-detail", null], ["heads-rollout", "encoder"]]) {
      const div = this.$(id);
      if (div.dataset.state !== "drawn" || div.dataset.stale) continue;
      window.Plotly.relayout(div, { shapes: hoverShapes(kind || div.dataset.kind, hover) });
    }
    document.documentElement.dataset.headsHover = hover ? `${hover.side}.${hover.index}` : "";
  }

  drawRollout() {
    const div = this.$("heads-rollout");
    div.closest("figure").hidden = !this.page.rollout;
    if (!this.page.rollout) showEmpty(div, "Tick “attention rollout” to show it.");
    if (!this.page.rollout || !this.answer) return;
    whenNear(div, () => {
      const { rollout, source_tokens: tokens, model } = this.answer;
      const layer = Math.min(this.heads.layer, rollout.length - 1);
      const trace = attentionTrace({ weights: rollout[layer], rows: tokens, cols: tokens });
      div.dataset.layer = String(layer);
      draw(div, [trace], baseLayout({ margin: { l: 60, r: 12, t: 8, b: 60 }, shapes: hoverShapes("encoder", this.hover),
        xaxis: tokenAxis(tokens, { tickangle: -45 }), yaxis: tokenAxis(tokens, { autorange: "reversed" }) }),
      `${model}-rollout-L${layer + 1}`, this.answer);
      this.$("heads-rollout-title").textContent = `Encoder rollout through layer ${layer + 1}`;
    });
  }

  /** The enlarged head's rows, each the sum of its weights on the selected source pieces. */
  drawSummed() {
    const div = this.$("heads-summed");
    const attention = this.heads.answers.get(this.heads.model);
    const kind = this.heads.kind;
    const map = attention && attention.maps.find((m) => m.kind === kind && m.layer === this.heads.layer && m.head === this.heads.head);
    if (!map || SIDES[kind].cols[0] !== "source") {
      showEmpty(div, "Pick cross or encoder attention: their columns are the source words you can select.");
      return;
    }
    const sel = this.page.sel.filter((j) => j < map.cols.length);
    if (!sel.length) {
      showEmpty(div, "Click source words above to sum the attention they receive.");
      return;
    }
    const y = map.weights.map((row) => sel.reduce((s, j) => s + row[j], 0));
    div.dataset.selected = sel.join(",");
    draw(div, [{ type: "bar", x: map.rows.map((_, i) => i), y, marker: { color: "#0072B2" },
      customdata: map.rows.map((t) => plotText(showToken(t))), hovertemplate: "<b>%{customdata}</b>: %{y:.3f}<extra></extra>" }],
    baseLayout({ margin: { l: 44, r: 8, t: 8, b: 50 }, xaxis: tokenAxis(map.rows), yaxis: { range: [0, 1], title: { text: "summed weight" }, gridcolor: "#eceef3" } }),
    `${this.heads.model}-${kind}-L${this.heads.layer + 1}H${this.heads.head + 1}-summed`, { map, selected: sel, summed: y });
  }
}

/** Outline the hovered token's row and column in a map of `kind`. */
function hoverShapes(kind, hover) {
  if (!hover || !SIDES[kind]) return [];
  const line = { color: HIGHLIGHT, width: 2 };
  const shapes = [];
  const [rowSide, rowOffset] = SIDES[kind].rows;
  const [colSide, colOffset] = SIDES[kind].cols;
  if (rowSide === hover.side) {
    const y = hover.index + rowOffset;
    shapes.push({ type: "rect", xref: "paper", x0: 0, x1: 1, y0: y - 0.5, y1: y + 0.5, line });
  }
  if (colSide === hover.side) {
    const x = hover.index + colOffset;
    shapes.push({ type: "rect", yref: "paper", y0: 0, y1: 1, x0: x - 0.5, x1: x + 0.5, line });
  }
  return shapes;
}
