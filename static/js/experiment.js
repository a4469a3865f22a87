// One chapter experiment: a POST asked for the text in the box when its figures come near the
// screen (lazy.js), a newer ask aborting the older (requests.js `Latest`), the answer handed to
// `show`, a failure shown in the chapter's figures.
import * as api from "./api.js";
import { whenNear } from "./lazy.js";
import { showEmpty } from "./plots.js";
import { Latest } from "./requests.js";

export class Experiment {
  /**
   * `anchor`: the plot whose nearness starts it; `call(text, signal)` -> Promise of the answer;
   * `show(answer)`; `plots`: the divs that show a failure; `what` names it in that line;
   * `missing`: the reason given when the server has no model for it (404; null: the server's own); `within()`: a signal
   * that also ends the ask (the round's); `late(failure)`: told of a failure of an ask put off
   * until the figures came near, which no round is waiting for.
   */
  constructor({ anchor, call, show, plots = [], what, missing = "no model for it is loaded", within = null, late = () => {} }) {
    Object.assign(this, { anchor, call, show, plots, what, missing, late });
    this.latest = new Latest(within);
  }

  /** Ask about `text` when the chapter is near; resolves to a failure line or null. */
  update(text) {
    return whenNear(this.anchor, () => this.ask(text), () => this.ask(text).then((failure) => failure && this.late(failure))) ?? Promise.resolve(null);
  }

  async ask(text) {
    try {
      await this.latest.ask((signal) => this.call(text, signal), this.show);
      return null;
    } catch (error) {
      const why = error instanceof api.ApiError && error.status === 404 && this.missing ? this.missing : api.explain(error);
      for (const div of this.plots) showEmpty(div, `The ${this.what} could not be shown (${why}).`);
      return `${this.what}: ${why}`;
    }
  }
}
