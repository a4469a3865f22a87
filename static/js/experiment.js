// One chapter experiment: a POST asked for the text in the box when its view's figures come near
// the screen (lazy.js), a newer ask aborting the older (requests.js `Latest`), the answer handed
// to the view, a failure shown in the view's figures.
import * as api from "./api.js";
import { whenNear } from "./lazy.js";
import { showEmpty } from "./plots.js";
import { Latest } from "./requests.js";

export class Experiment {
  /**
   * `view`: a chapter view, which has `anchor` (the plot whose nearness starts it), `plots` (the
   * divs that show a failure), `call(text, signal)` (the request) and `show(answer)`. `what` names
   * it in the failure line; `missing`: the reason given when the server has no model for it (404;
   * null: the server's own); `within()`: a signal that also ends the ask (the round's);
   * `late(failure)`: told of a failure of an ask put off until the figures came near, which no
   * round is waiting for.
   */
  constructor(view, { what, missing = "no model for it is loaded", within = null, late = () => {} }) {
    Object.assign(this, { view, what, missing, late });
    this.latest = new Latest(within);
    this.text = null;
  }

  /** Ask about `text` when the chapter is near; resolves to a failure line or null. */
  update(text) {
    const { anchor } = this.view;
    return whenNear(anchor, () => this.ask(text), () => this.ask(text).then((failure) => failure && this.late(failure))) ?? Promise.resolve(null);
  }

  /** Ask now about `text` (by default the text last asked about: the reader changed a control). */
  async ask(text = this.text) {
    if (text === null) return null; // a control moved before the chapter first asked: it will ask with the text
    this.text = text;
    try {
      await this.latest.ask((signal) => this.view.call(text, signal), (answer) => this.view.show(answer));
      return null;
    } catch (error) {
      const why = error instanceof api.ApiError && error.status === 404 && this.missing ? this.missing : api.explain(error);
      for (const div of this.view.plots) showEmpty(div, `The ${this.what} could not be shown (${why}).`);
      return `${this.what}: ${why}`;
    }
  }
}
