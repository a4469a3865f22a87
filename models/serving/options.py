"""The serving settings, declared once: what may be asked for, and what is by default.

Torch-free, so that the server's settings (app/config.py) and its JSON contract (app/schemas.py)
read them without loading a model library. What each one does: models/serving/__init__.py.
"""

from __future__ import annotations

LAYOUTS = ("input-major", "as-stored")  # how the served weights lie in memory (layout.py)
PRECISIONS = ("fp32", "fp16-weights")  # whether they also have fp16 copies for their products (precision.py)
STEPS = ("graph", "python")  # how a model runs its decoding steps, and a Transformer its encoder (graph.py)

LAYOUT, PRECISION, STEP = "input-major", "fp16-weights", "graph"  # the server's defaults
PLAIN = ("as-stored", "fp32", "python")  # the trained model's own numbers: every fast path off


def check(layout: str, precision: str, step: str) -> None:
    """ValueError naming the allowed values when one of the three is not among them."""
    for kind, value, allowed in (("layout", layout, LAYOUTS), ("precision", precision, PRECISIONS),
                                 ("step", step, STEPS)):
        if value not in allowed:
            raise ValueError(f"{kind} {value!r}: one of {', '.join(allowed)}")
