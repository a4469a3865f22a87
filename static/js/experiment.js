// One chapter experiment: a POST asked for the text in the box when its figures come near the
// screen (lazy.js), a newer ask aborting the older, the answer handed to `show`, a failure shown
// in the chapter's figures.
import * as api from "./api.js";
import { whenNear } from "./lazy.js";
import { showEmpty } from "./plots.js";
import { Latest } from "./requests.js";

export class Experiment {
  /** `anchor`: the plot whose nearness starts it; `call(text, signal)`; `show(answer)`; `plots`: divs for a failure. */
  constructor(anchor, call, show, plots, what) {
    Object.assign(this, { anchor, call, show, plots, what });
    this.latest = new Latest();
  }

  /** Ask about `text` when the chapter is near; resolves to a failure line or null. */
  update(text) {
    return whenNear(this.anchor, () => this.ask(text), () => this.ask(text).then(() => null)) ?? Promise.resolve(null);
  }

  async ask(text) {
    try {
      await this.latest.ask((signal) => this.call(text, signal), this.show);
      return null;
    } catch (error) {
      const why = error instanceof api.ApiError && error.status === 404 ? "no model for it is loaded" : api.explain(error);
      for (const div of this.plots) showEmpty(div, `The ${this.what} could not be shown (${why}).`);
      return `${this.what}: ${why}`;
    }
  }
}
