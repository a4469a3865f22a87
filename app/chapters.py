"""The story's chapters, each one record, in the story's order: a chapter's number is its place in
`CHAPTERS` and is written nowhere else. Its `slug` names it everywhere: its section and its template
(templates/chapters/<slug>.html), its link (`?ch=<slug>`), its words in the message catalogues (keys
`<slug>.`), its question (static/js/questions/<slug>.js), its views (static/js/chapters/) and its recap
row. The page's own side of a chapter (its views, their URL keys, its question) is declared by its
modules in static/js/; this holds what crosses to the server.

What production reads of a record:
- `slug`: as above; the navigation, the sections and the recap's rows are written from the list
  (templates/index.html), and the catalogues' references `{chapter:<slug>}` are its number.
- `views`: its view modules (static/js/chapters/<name>.js), in the order the page builds them and
  asks them about a new text; the page loads its views from the list (templates/index.html writes
  it on <body data-views>, static/js/contents.js imports them).
- `figures`: the ids of its figures one may embed (`/embed/<id>`, app/routes/pages.py); the
  template writes them on the page for static/js/embed.js, which offers exactly these.
- `routes`: the API routes its views ask, in order: the first visit's answers are computed ahead in
  this order (app/services/ahead.py), after the first screen's (`FIRST_SCREEN`), for the routes whose
  service declares the page's request (`PAGE`); a run the reader starts (`/api/train`, `/api/teach`)
  declares none and is never computed ahead.
- `recap`: the parts of its row in the recap ("" its main measurement, else the part's name), each a
  place the row's number is written (templates/chapters/point.html); app/services/recap.py
  measures on the server the parts it has a measurement for, the chapter's view the others.
- `question`: how its question (static/js/questions/<slug>.js) is posed, written on its section for
  static/js/questions.js: "sentence" (measured on the reader's sentence), "fixed" (the same for every
  sentence), "later" (the same for every sentence, measured once the reader has guessed), or None
  (no question).

What only the tests read (their checks of the page, on the tiny models):
- `opens`: the test ids of the figures it draws as soon as it is opened ("{aligning}": the first
  recurrent model with cross-attention, whose figures the attention chapter shows first).
- a route's `failure` (where the page says it failed), `light` and `heavy` (how a test server asks it).

`BEFORE_SLUGS` keeps the links made when chapters had numbers: `?ch=<n>` and `?tour=<n>,...` open
the chapter that n named then (app/routes/pages.py).

A leaf: it imports nothing of the app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Route:
    path: str  # POST unless `get`
    failure: str | None = None  # tests: where the page says this route's failure (a CSS selector)
    light: dict[str, Any] = field(default_factory=dict)  # tests: fields that keep a valid request quick
    heavy: bool = False  # tests: seconds per request at its schema's bounds
    get: bool = False


@dataclass(frozen=True)
class Chapter:
    slug: str
    views: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    routes: tuple[Route, ...] = ()
    recap: tuple[str, ...] = ("",)
    opens: tuple[str, ...] = ()
    question: str | None = "sentence"

    @property
    def number(self) -> int:
        """Its place in the story, from 1."""
        return number(self.slug)


def _empty(testid: str) -> str:
    return f"[data-testid{testid}] .plot-empty"


# The first screen (static/js/glance.js): every model's translation and maps, which the bottleneck,
# attention and heads chapters show too. Its failure is said on each model's card.
FIRST_SCREEN = (Route("/api/compare", failure="#cards .card__text.is-missing"),)

CHAPTERS = (
    Chapter("training", views=("training", "teach", "teach-run"),
            figures=("curves-plot", "teach-loss", "teach-layers", "teach-map"), opens=("curves-plot",),
            routes=(Route("/api/curves", _empty("=curves-plot"), get=True), Route("/api/teach", heavy=True)),
            question="fixed"),
    Chapter("recurrence", views=("recurrence",),
            figures=("recurrence-plot", "recurrence-change"),
            opens=("recurrence-plot", "recurrence-change"),
            routes=(Route("/api/recurrence", _empty("=recurrence-plot")),)),
    Chapter("gradients", views=("gradients", "long-lag", "lag-gradients"),
            figures=("grad-plot", "factor-plot", "lag-accuracy", "lag-gradients", "gates-plot"),
            opens=("gradient-plot",),
            routes=(Route("/api/gradients", _empty("=gradient-plot")),
                    Route("/api/long-lag", _empty("=lag-accuracy"), get=True),
                    Route("/api/long-lag/gradients", _empty("=lag-gradients"), light={"lag": 4}))),
    Chapter("bottleneck", views=("translations", "bleu", "live", "live-run"),
            figures=("bleu-plot", "live-loss", "live-accuracy", "live-maps", "live-reference"),
            opens=("bleu-plot",), routes=(Route("/api/train", heavy=True),)),
    Chapter("attention", views=("alignment", "alignment-replay", "scores", "lookup"),
            figures=("alignment-plots", "scores-panels", "lookup-plot"),
            opens=("attention-{aligning}", "scores-{aligning}", "blend-{aligning}"),
            routes=(Route("/api/scores", _empty("^=scores-")), Route("/api/snapshots", _empty("^=scrub-map-")),
                    Route("/api/lookup", _empty("=lookup-plot"))),
            recap=("", "lookup")),
    Chapter("parallel", views=("timing",),
            figures=("timing-plot",), opens=("timing-plot",),
            routes=(Route("/api/timing", "[data-testid=timing-status]"),), question="later"),
    Chapter("scaling", views=("scaling",),
            figures=("scaling-curves", "scaling-heads"), opens=("scaling-curves", "scaling-heads"),
            routes=(Route("/api/scaling", _empty("=scaling-curves"), light={"d_k": [4, 16], "keys": 4},
                          heavy=True),)),
    Chapter("order", views=("order",),
            figures=("order-maps", "order-pe"), opens=("order-maps", "order-pe"),
            routes=(Route("/api/order", _empty("=order-maps")),)),
    Chapter("heads", views=("heads", "heads-replay", "heads-lab"),
            figures=("heads-grid", "head-detail", "heads-contrib", "heads-summed", "heads-ranking",
                     "heads-rollout"),
            opens=("heads-grid", "head-detail"),
            routes=(Route("/api/heads", _empty("=heads-contrib")),)),
    Chapter("room", views=("sublayers",),
            routes=(Route("/api/translate"),), question="fixed"),
    Chapter("prediction", views=("predict", "next-token"),
            figures=("predict-tree", "labels-plot"), opens=("predict-tree",),
            routes=(Route("/api/predict", _empty("=predict-tree")), Route("/api/next-token")),
            recap=("", "labels")),
    Chapter("point", views=("recap",),
            routes=(Route("/api/recap"),), recap=()),
)

# The chapters as links numbered them before they had slugs: `?ch=<n>` meant BEFORE_SLUGS[n - 1].
BEFORE_SLUGS = ("training", "recurrence", "gradients", "bottleneck", "attention", "parallel", "scaling",
                "order", "heads", "prediction", "point")

_NUMBERS = {chapter.slug: place for place, chapter in enumerate(CHAPTERS, start=1)}


def number(slug: str) -> int:
    """Chapter `slug`'s place in the story, from 1 (KeyError: no such chapter)."""
    return _NUMBERS[slug]


def slugs() -> tuple[str, ...]:
    return tuple(_NUMBERS)


def before_slugs(value: str) -> str:
    """A chapter as an old link named it (its number then) -> its slug; anything else as it is."""
    return BEFORE_SLUGS[int(value) - 1] if value.isdigit() and 1 <= int(value) <= len(BEFORE_SLUGS) else value


def routes() -> tuple[Route, ...]:
    """Every route the page asks, each once: the first screen's, then in the chapters' order."""
    seen: dict[str, Route] = {}
    for route in (*FIRST_SCREEN, *(r for chapter in CHAPTERS for r in chapter.routes)):
        seen.setdefault(route.path, route)
    return tuple(seen.values())


def figures() -> frozenset[str]:
    """Every figure one may embed."""
    return frozenset(f for chapter in CHAPTERS for f in chapter.figures)
