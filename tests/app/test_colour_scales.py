"""The figures' colour scales (static/js/plots.js) as readers with a colour-vision deficiency see them.

Each scale's stops are read from plots.js, each deficiency simulated with the severity-1.0 matrices of
Machado, Oliveira and Fernandes (2009, "A physiologically-based model for simulation of color vision
deficiency", IEEE TVCG 15(6)), applied to linear RGB. What a reader of a sequential scale needs is
its order, and order survives a deficiency only as lightness: so the checks are on relative
luminance and WCAG's contrast ratio, (L1 + 0.05) / (L2 + 0.05), under each simulation:

- lightness rises from end to end (checked at every eighth): a darker cell always means a smaller
  value, whatever the reader's colour vision;
- the ends differ by at least 7:1 (WCAG's bar for body text, AAA) for the default scales and 15:1 at
  high contrast: the zero cells and the strongest stand apart as text does from its page, far over
  the 3:1 WCAG 1.4.11 asks of graphical objects;
- neighbouring quarters (0, 1/4, 1/2, 3/4, 1) differ by at least 1.4:1 (a Weber contrast of 40%
  with WCAG's flare term, over ten times the few per cent at which an edge between two patches
  shows): a weight of 0.5 is never read as 0.75.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from app.config import REPO_ROOT

PLOTS = (REPO_ROOT / "static" / "js" / "plots.js").read_text(encoding="utf-8")
CSS = (REPO_ROOT / "static" / "css" / "app.css").read_text(encoding="utf-8")
HEX = re.compile(r"#[0-9a-fA-F]{6}")

# Machado et al. 2009, Table 1, severity 1.0 (rows: simulated R, G, B from linear R, G, B)
DEFICIENCIES = {
    "protanopia": [[0.152286, 1.052583, -0.204868],
                   [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968],
                     [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779],
                   [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
    "none": np.eye(3).tolist(),
}
ENDS = {"WEIGHT_SCALE": 7.0, "GATE_SCALE": 7.0, "WEIGHT_SCALE_MORE": 15.0, "GATE_SCALE_MORE": 15.0}
QUARTER_STEP = 1.4


def scale(name: str) -> list[str]:
    """The colours of the evenly spaced stops plots.js gives `name`."""
    found = re.search(rf"const {name} = evenly\(\[(.*?)\]\)", PLOTS, re.S)
    assert found, f"{name} is not an evenly([...]) scale in plots.js"
    return HEX.findall(found.group(1))


def srgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255


def linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def at(colours: list[str], p: float) -> np.ndarray:
    """The scale's colour at `p` in 0..1, in linear RGB, between stops mixed in sRGB as Plotly mixes them."""
    stops = [srgb(c) for c in colours]
    k = min(int(p * (len(stops) - 1)), len(stops) - 2)
    f = p * (len(stops) - 1) - k
    return linear(stops[k] * (1 - f) + stops[k + 1] * f)


def luminance(rgb_linear: np.ndarray, deficiency: str) -> float:
    seen = np.clip(np.array(DEFICIENCIES[deficiency]) @ rgb_linear, 0, 1)
    return float(seen @ [0.2126, 0.7152, 0.0722])


def contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def problems(colours: list[str], deficiency: str, ends: float) -> list[str]:
    """What makes the scale unreadable for `deficiency`: [] when it reads."""
    eighths = [luminance(at(colours, p), deficiency) for p in np.linspace(0, 1, 9)]
    found = []
    if any(b <= a for a, b in zip(eighths[:-1], eighths[1:], strict=True)):
        found.append("lightness does not rise from end to end")
    if contrast(eighths[0], eighths[-1]) < ends:
        found.append(f"ends {contrast(eighths[0], eighths[-1]):.2f}:1 < {ends}:1")
    quarters = eighths[::2]
    for i, (a, b) in enumerate(zip(quarters[:-1], quarters[1:], strict=True)):
        if contrast(a, b) < QUARTER_STEP:
            found.append(f"quarters {i}/4-{i + 1}/4 {contrast(a, b):.2f}:1 < {QUARTER_STEP}:1")
    return found


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
@pytest.mark.parametrize("name", ENDS)
def test_scale_reads_with_each_colour_vision(name, deficiency):
    assert problems(scale(name), deficiency, ENDS[name]) == []


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
@pytest.mark.parametrize("name", ["WEIGHT_SCALE", "GATE_SCALE"])
def test_high_contrast_scale_has_more_contrast(name, deficiency):
    def ends(colours):
        return contrast(luminance(at(colours, 0), deficiency), luminance(at(colours, 1), deficiency))

    assert ends(scale(f"{name}_MORE")) > ends(scale(name))


def test_the_check_fails_a_red_green_scale():
    """A scale from red to green of about equal lightness, read by colour alone: the check must refuse it."""
    red_green = ["#d62728", "#a08a2a", "#2ca02c"]
    assert problems(red_green, "deuteranopia", 7.0)
    assert problems(["#00204d", "#fde725", "#440154"], "none", 3.0)  # not monotone


@pytest.mark.parametrize(("name", "selector"), [
    ("WEIGHT_SCALE", ".legend__bar--viridis {"), ("GATE_SCALE", ".legend__bar--cividis {"),
    ("WEIGHT_SCALE_MORE", '[data-contrast="more"] .legend__bar--viridis {'),
    ("GATE_SCALE_MORE", '[data-contrast="more"] .legend__bar--cividis {'),
])
def test_legends_show_the_scales_drawn(name, selector):
    """The HTML colour legends (app.css) are the scales the figures draw, at each contrast."""
    rule = re.search(rf"(?:^|\n){re.escape(selector)}(.*?)}}", CSS, re.S)
    assert rule, selector
    assert HEX.findall(rule.group(1)) == scale(name)
