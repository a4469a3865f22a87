"""The snapshot service and POST /api/snapshots on the tiny models (tests/tiny.py gives two of
them made-up training snapshots): the timeline, the maps at each point, the errors."""

from __future__ import annotations

import pytest

from app.runtime import trained_states as states_module
from app.runtime.errors import UnknownSnapshotError
from app.services.catalog import model_infos
from app.services.maps import attention_maps
from app.services.snapshots import snapshot_maps
from tests.app.answers import sent
from tests.app.conftest import TEXT
from tests.tiny import SNAPSHOT_MODELS, SNAPSHOT_STEPS


def test_models_trained_with_snapshots_list_their_timeline(registry):
    infos = {info["name"]: info for info in sent(model_infos(registry))}
    for name, info in infos.items():
        if name not in SNAPSHOT_MODELS:
            assert info["snapshots"] == []
            continue
        timeline = info["snapshots"]
        assert [p["step"] for p in timeline] == [0, *SNAPSHOT_STEPS, info["kept"]["step"]]
        middle = ["snapshot"] * len(SNAPSHOT_STEPS)
        assert [p["weights"] for p in timeline] == ["initialized", *middle, "shipped"]
        assert all(p["valid_bleu"] is not None and p["precision"] for p in timeline)


@pytest.mark.parametrize("name", SNAPSHOT_MODELS)
def test_every_point_gives_maps_whose_rows_sum_to_one(registry, name):
    seen = set()
    for point in sent(registry.get(name).timeline()):
        answer = sent(snapshot_maps(registry, name, TEXT, point["step"], ("cross",)))
        assert answer["snapshot"] == point
        weights = answer["maps"][0]["weights"]
        assert all(abs(sum(row) - 1) < 1e-3 for row in weights)
        seen.add(str(weights))
    assert len(seen) == len(registry.get(name).timeline())  # each point its own weights


@pytest.mark.parametrize("name", SNAPSHOT_MODELS)
def test_the_last_point_is_the_shipped_model_and_the_first_its_initialization(registry, name):
    last = registry.get(name).timeline()[-1].step
    shipped = sent(attention_maps(registry, name, TEXT, kinds=("cross",)))
    at_last = sent(snapshot_maps(registry, name, TEXT, last, ("cross",)))
    assert {k: v for k, v in at_last.items() if k != "snapshot"} == shipped
    assert registry.states.at_step(name, 0) is registry.states.initialized(name)


def test_few_snapshots_are_held_in_memory(registry, monkeypatch):
    monkeypatch.setattr(states_module, "SNAPSHOTS_KEPT", 1)
    for name in SNAPSHOT_MODELS:
        for step in SNAPSHOT_STEPS:
            registry.jobs.thread.run(registry.states.at_step, name, step)
    assert list(registry.states.snapshot_models) == [(SNAPSHOT_MODELS[-1], SNAPSHOT_STEPS[-1])]


def test_an_unknown_step_or_a_model_without_snapshots_is_refused_before_any_work(registry):
    with pytest.raises(UnknownSnapshotError, match="steps: 0, 1, 2, 3"):
        sent(snapshot_maps(registry, "transformer", TEXT, 7))
    with pytest.raises(UnknownSnapshotError, match="without snapshots"):
        sent(snapshot_maps(registry, "lstm", TEXT, 0))


def test_the_endpoint(client):
    ok = client.post("/api/snapshots",
                     json={"model": "transformer", "text": TEXT, "step": 1, "kinds": ["cross"]})
    assert ok.status_code == 200
    body = ok.json()
    assert body["snapshot"]["step"] == 1 and body["snapshot"]["weights"] == "snapshot"
    assert {m["kind"] for m in body["maps"]} == {"cross"}
    for bad, status in [({"model": "transformer", "text": TEXT, "step": 7}, 404),
                        ({"model": "lstm", "text": TEXT, "step": 0}, 404),
                        ({"model": "gpt", "text": TEXT, "step": 0}, 404),
                        ({"model": "transformer", "text": " ", "step": 0}, 422),
                        ({"model": "transformer", "text": TEXT, "step": -1}, 422),
                        ({"model": "transformer", "text": TEXT}, 422)]:
        answer = client.post("/api/snapshots", json=bad)
        assert answer.status_code == status, (bad, answer.text)
        assert answer.json()["detail"]
    infos = {m["name"]: m for m in client.get("/api/models").json()}
    assert [p["step"] for p in infos["transformer"]["snapshots"]] == [0, *SNAPSHOT_STEPS, 3]
