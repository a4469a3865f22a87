// Draw only what the reader can (nearly) see. Each redraw of a Plotly figure costs tens of
// milliseconds of main-thread time; a plot far below the fold is marked stale instead and drawn
// when it scrolls within NEAR_PX of the screen, which is before it comes into sight.

const NEAR_PX = 400;
const pending = new Map(); // element -> the latest draw it is waiting for
const near = new Set();
const reported = new WeakSet();

const observer = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      reported.add(entry.target);
      if (!entry.isIntersecting) {
        near.delete(entry.target);
        continue;
      }
      near.add(entry.target);
      const run = pending.get(entry.target);
      if (run) {
        pending.delete(entry.target);
        run();
      }
    }
  },
  { rootMargin: `${NEAR_PX}px 0px` },
);

function isNear(element) {
  if (reported.has(element)) return near.has(element);
  observer.observe(element);
  const box = element.getBoundingClientRect(); // not reported yet: measure once
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
