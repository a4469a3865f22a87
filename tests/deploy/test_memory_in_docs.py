"""A replica's memory is stated in one doc, deploy/README.md, as the figure the manifests are sized
from (test_manifests.py pins it); the README and docs/SERVER.md link there and state none of their own."""

from __future__ import annotations

import re

from tests.deploy.files import DEPLOY, ROOT
from tests.deploy.test_manifests import MEASURED_RSS_MIB, MEASURED_STEPPER_MIB, MIB_PER_CACHED_RESULT

SIZING = "deploy/README.md#memory-per-replica"
QUANTITY = re.compile(r"(\d[\d,.]*)\s*(?:KiB|MiB|GiB|kB|MB|GB)\b(?!/s)")
# words that make a memory figure one of the whole server process: what a replica holds
PROCESS = re.compile(r"\b(?:resident|RSS|VmRSS|VmHWM|peak|replicas?)\b", re.IGNORECASE)


def _statements(text: str) -> list[str]:
    """Sentences of prose (lines joined within a paragraph) and rows of tables, code left out."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    statements = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = paragraph.strip().splitlines()
        if lines and lines[0].startswith("|"):
            statements += lines
        else:
            statements += re.split(r"(?<=[.;])\s+", " ".join(line.strip() for line in lines))
    return statements


def _process_figures(text: str) -> list[tuple[str, str]]:
    return [(statement, figure) for statement in _statements(text) if PROCESS.search(statement)
            for figure in QUANTITY.findall(statement)]


def _setting_default(name: str) -> int:
    """The default of an integer field of app.config.Settings, read from its source (no import)."""
    return int(re.search(rf"\b{name}: int = Field\((\d+)", (ROOT / "app" / "config.py").read_text())[1])


def test_deploy_readme_gives_the_pinned_peak_per_replica():
    text = (DEPLOY / "README.md").read_text()
    start = text.index("### Memory per replica")
    section = text[start:text.index("\n## ", start)]
    peaks = re.findall(r"\*\*([\d,]+) MiB peak \(VmHWM\) per replica\*\*", section)
    assert peaks == [str(MEASURED_RSS_MIB)], peaks
    assert re.search(rf"\|\s*\+ ~{MIB_PER_CACHED_RESULT} MiB\s*\|", section), "the cached result's cost"
    assert re.search(rf"\*\*{MEASURED_STEPPER_MIB} MiB peak \(VmHWM\) per stepper process\*\*", section)
    # beside the peaks, only the bounds the settings give: the result cache's and a training run's
    known = {MEASURED_RSS_MIB, MEASURED_STEPPER_MIB, _setting_default("cache_mb"),
             _setting_default("train_memory_mb")}
    others = [(s, f) for s, f in _process_figures(text) if int(float(f.replace(",", ""))) not in known]
    assert not others, f"deploy/README.md states another memory figure for the process: {others}"


def test_the_other_docs_link_to_it_and_state_no_figure_of_their_own():
    for doc in ("README.md", "docs/SERVER.md"):
        text = (ROOT / doc).read_text()
        assert SIZING in text, f"{doc} does not link to {SIZING}"
        assert not _process_figures(text), f"{doc} states a replica's memory: {_process_figures(text)}"


def test_the_checks_catch_a_second_figure():
    assert _process_figures("It is about 640 MiB resident per replica.\n\nThe cache holds 64 MiB.") == [
        ("It is about 640 MiB resident per replica.", "640")]
    assert _process_figures("| peak | 1.4 GiB |\n| bandwidth | 30 GB/s |") == [("| peak | 1.4 GiB |", "1.4")]
