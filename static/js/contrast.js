// The page's contrast: normal, or high (darker text and lines, and the figures' high-contrast colour
// scales, plots.js). High when the reader pressed the switch in the header, remembered in this
// browser; until they press it, high when their system asks for more contrast (prefers-contrast).
// Switching redraws every figure from what it last drew: no request leaves.
import { redrawAll } from "./plots.js";

const KEY = "attentionLab.contrast"; // "more" or "normal", once the reader chose
const SYSTEM = matchMedia("(prefers-contrast: more)");

function chosen() {
  try {
    return localStorage.getItem(KEY);
  } catch (error) {
    return null; // storage refused (a private window's policy): the system decides
  }
}

function remember(value) {
  try {
    localStorage.setItem(KEY, value);
  } catch (error) { /* not remembered: this page still switches */ }
}

/** Whether the page should be at high contrast: the reader's choice, else the system's. */
const wanted = () => (chosen() ?? (SYSTEM.matches ? "more" : "normal")) === "more";

/** Put the page at high contrast or not; the switch and the figures follow. */
function apply(more) {
  const root = document.documentElement;
  if ((root.dataset.contrast === "more") === more) return;
  if (more) root.dataset.contrast = "more";
  else delete root.dataset.contrast;
  document.getElementById("contrast-switch")?.setAttribute("aria-pressed", String(more));
  redrawAll();
}

/** The contrast the page starts at, set before any figure is drawn. */
export function startContrast() {
  apply(wanted());
  wireSwitch();
  SYSTEM.addEventListener("change", () => apply(wanted()));
}

/** The switch in the page's header (the template writes it, so that the header never moves): a toggle button. */
function wireSwitch() {
  const button = document.getElementById("contrast-switch");
  if (!button) return;
  button.setAttribute("aria-pressed", String(document.documentElement.dataset.contrast === "more"));
  button.addEventListener("click", () => {
    const more = button.getAttribute("aria-pressed") !== "true";
    remember(more ? "more" : "normal");
    apply(more);
  });
}
