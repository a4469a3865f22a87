// "Download the numbers": every figure offers the JSON the API answered for what it shows, byte
// for byte the same values, as a file. One button per figure, placed right after its plot; the
// answer it downloads is the last one the figure was drawn from.
import { el } from "./dom.js";
import { label, t } from "./i18n.js";

const latest = new WeakMap(); // plot div -> { numbers, name }

/** Remember `numbers` (undefined: none, the button hides) as what `div` shows, under `name`. */
export function offerNumbers(div, numbers, name) {
  let button = div.nextElementSibling;
  if (!button || !button.classList.contains("numbers")) {
    if (numbers === undefined) return;
    button = label(el("button", "numbers"), "numbers.download");
    button.type = "button";
    if (div.dataset.testid) button.dataset.testid = `numbers-${div.dataset.testid}`;
    button.addEventListener("click", () => download(div));
    div.after(button);
  }
  latest.set(div, { numbers, name });
  button.classList.toggle("numbers--none", numbers === undefined); // keeps its room: nothing moves
  button.setAttribute("aria-label", t("numbers.download-label", { figure: div.getAttribute("aria-label") || t("numbers.this-figure") }));
}

function download(div) {
  const held = latest.get(div);
  if (!held || held.numbers === undefined) return;
  const blob = new Blob([JSON.stringify(held.numbers, null, 2)], { type: "application/json" });
  const link = el("a");
  link.href = URL.createObjectURL(blob);
  link.download = `${held.name || "numbers"}.json`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
