// Draw only what the reader can (nearly) see. Each redraw of a Plotly figure costs tens of
// milliseconds of main-thread time; a plot far below the fold is marked stale instead and drawn
// when it scrolls within NEAR_PX of the screen, which is before it comes into sight.
//
// Until the reader first scrolls, only figures on the screen itself are drawn: the first figure
// drawn also loads Plotly (plots.js), and a reader who is still typing on the first screen should
// not wait for it. The first scroll draws every figure within NEAR_PX at once.

const NEAR_PX = 400;
const pending = new Map(); // element -> the latest draw it is waiting for
const near = new Set(); // elements within NEAR_PX of the screen
const reported = new WeakSet();
let scrolled = false;

const onScreen = (box) => box.bottom > 0 && box.top < window.innerHeight && box.height > 0;

function run(element) {
  const later = pending.get(element);
  if (later) {
    pending.delete(element);
    later();
  }
}

const observer = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      reported.add(entry.target);
      if (!entry.isIntersecting) {
        near.delete(entry.target);
        continue;
      }
      near.add(entry.target);
      if (scrolled || onScreen(entry.boundingClientRect)) run(entry.target);
    }
  },
  { rootMargin: `${NEAR_PX}px 0px` },
);

addEventListener("scroll", function first() {
  removeEventListener("scroll", first);
  scrolled = true;
  for (const element of [...near]) run(element);
}, { passive: true });

/**
 * Whether `element` is on or within NEAR_PX of the screen (until the first scroll: on the screen itself).
 * One in a closed fold (<details>) is not: it has no box until the reader opens the fold.
 */
export function isNear(element) {
  if (scrolled && reported.has(element)) return near.has(element);
  observer.observe(element);
  if (element.closest("details:not([open])")) return false;
  const box = element.getBoundingClientRect(); // not reported yet, or not scrolled yet: measure
  if (!scrolled) return onScreen(box);
  return box.bottom > -NEAR_PX && box.top < window.innerHeight + NEAR_PX;
}

/**
 * Run `draw` now if `element` is on or near the screen, else `later` (default: `draw`) when it
 * gets there; only the latest is kept. Returns what `draw` returns, or null when put off.
 */
export function whenNear(element, draw, later = draw) {
  if (isNear(element)) {
    pending.delete(element);
    delete element.dataset.stale;
    return draw();
  }
  element.dataset.stale = "true";
  pending.set(element, () => {
    delete element.dataset.stale;
    later();
  });
  return null;
}
