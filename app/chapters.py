"""The story's chapters, each declared once: what the server, the page's shell and the tests need to
know of it. The page's own side of a chapter (its views, their URL keys, its question) is declared
by its modules in static/js/chapters/; this holds what crosses to the server.

- `figures`: the ids of its figures one may embed (`/embed/<id>`, app/routes/pages.py); the
  template writes them on the page for static/js/embed.js, which offers exactly these.
- `opens`: the test ids of the figures it draws as soon as it is opened ("{aligning}": the first recurrent model
  with cross-attention, whose figures chapter 5 shows first).
- `routes`: the API routes its views ask, each with the panel that says its failure on the page and,
  where the default request is slow on a test server, a lighter body (`light`) or `heavy` (no
  property-based checks). The first visit's answers are computed ahead in this order
  (app/services/ahead.py), after the first screen's (`FIRST_SCREEN`).
- `question`: how the question it asks before it shows its measurement (static/js/questions/bank.js)
  is posed: "sentence" (measured on the reader's sentence), "fixed" (the same for every sentence),
  "later" (the same for every sentence, measured once the reader has guessed), or None.
- `recap`: chapter 11's recap has a row for it (app/services/recap.py).

A leaf: it imports nothing of the app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Route:
    path: str  # POST unless `get`
    failure: str | None = None  # where the page says this route's failure (a CSS selector)
    light: dict[str, Any] = field(default_factory=dict)  # fields that keep a valid request quick
    heavy: bool = False  # seconds per request at its schema's bounds
    get: bool = False


@dataclass(frozen=True)
class Chapter:
    number: int
    figures: tuple[str, ...] = ()
    opens: tuple[str, ...] = ()
    routes: tuple[Route, ...] = ()
    question: str | None = "sentence"
    recap: bool = False

    @property
    def key(self) -> str:
        """The prefix of its words in the message catalogues, and its id in the URL's `ch`."""
        return f"ch{self.number}"


def _empty(testid: str) -> str:
    return f"[data-testid{testid}] .plot-empty"


# The first screen (static/js/glance.js): every model's translation and maps, which chapters 4, 5
# and 9 show too. Its failure is said on each model's card.
FIRST_SCREEN = (Route("/api/compare", failure="#cards .card__text.is-missing"),)

CHAPTERS = (
    Chapter(1, figures=("curves-plot",), opens=("curves-plot",),
            routes=(Route("/api/curves", _empty("=curves-plot"), get=True),), question="fixed"),
    Chapter(2, figures=("recurrence-plot", "recurrence-change"), opens=("recurrence-plot", "recurrence-change"),
            routes=(Route("/api/recurrence", _empty("=recurrence-plot")),), recap=True),
    Chapter(3, figures=("grad-plot", "factor-plot", "lag-accuracy", "lag-gradients", "gates-plot"),
            opens=("gradient-plot",),
            routes=(Route("/api/gradients", _empty("=gradient-plot")),
                    Route("/api/long-lag", _empty("=lag-accuracy"), get=True),
                    Route("/api/long-lag/gradients", _empty("=lag-gradients"), light={"lag": 4})),
            recap=True),
    Chapter(4, figures=("bleu-plot", "live-loss", "live-accuracy", "live-maps", "live-reference"),
            opens=("bleu-plot",), routes=(Route("/api/train", heavy=True),)),
    Chapter(5, figures=("alignment-plots", "scores-panels", "lookup-plot"),
            opens=("attention-{aligning}", "scores-{aligning}", "blend-{aligning}"),
            routes=(Route("/api/scores", _empty("^=scores-")), Route("/api/snapshots", _empty("^=scrub-map-")),
                    Route("/api/lookup", _empty("=lookup-plot"))),
            recap=True),
    Chapter(6, figures=("timing-plot",), opens=("timing-plot",),
            routes=(Route("/api/timing", "[data-testid=timing-status]"),), question="later", recap=True),
    Chapter(7, figures=("scaling-curves", "scaling-heads"), opens=("scaling-curves", "scaling-heads"),
            routes=(Route("/api/scaling", _empty("=scaling-curves"), light={"d_k": [4, 16], "keys": 4},
                          heavy=True),),
            recap=True),
    Chapter(8, figures=("order-maps", "order-pe"), opens=("order-maps", "order-pe"),
            routes=(Route("/api/order", _empty("=order-maps")),), recap=True),
    Chapter(9, figures=("heads-grid", "head-detail", "heads-contrib", "heads-ranking", "heads-summed",
                        "heads-rollout"),
            opens=("heads-grid", "head-detail"),
            routes=(Route("/api/heads", _empty("=heads-contrib")), Route("/api/translate"))),
    Chapter(10, figures=("predict-tree", "labels-plot"), opens=("predict-tree",),
            routes=(Route("/api/predict", _empty("=predict-tree")), Route("/api/next-token")), recap=True),
    Chapter(11, routes=(Route("/api/recap"),)),
)


def routes() -> tuple[Route, ...]:
    """Every route the page asks, each once: the first screen's, then in the chapters' order."""
    seen: dict[str, Route] = {}
    for route in (*FIRST_SCREEN, *(r for chapter in CHAPTERS for r in chapter.routes)):
        seen.setdefault(route.path, route)
    return tuple(seen.values())


def figures() -> frozenset[str]:
    """Every figure one may embed."""
    return frozenset(f for chapter in CHAPTERS for f in chapter.figures)
