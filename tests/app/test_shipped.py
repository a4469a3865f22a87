"""The real server on the five shipped checkpoints. Translations are not asserted word for word
(the models are retrained as training goes on), only the contract and sanity."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.config import REPO_ROOT
from app.main import app
from models.architectures import MODEL_NAMES
from tests.app.contract import check_attention, check_translation

CHECKPOINTS = REPO_ROOT / "checkpoints"
SHIPPED = list(MODEL_NAMES)  # every one of them must be in checkpoints/ and load
TEXT = "Je mange du pain avec mes amis."



@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:  # the module-level app: the lifespan loads checkpoints/
        yield test_client


def test_health_lists_the_shipped_models(client):
    health = client.get("/api/health").json()
    assert health["status"] == "ok"
    assert health["models"] == SHIPPED and health["unavailable"] == {}
    assert set(health["models"]) | set(health["unavailable"]) == set(MODEL_NAMES)


def test_models_describe_the_shipped_models(client):
    infos = {m["name"]: m for m in client.get("/api/models").json()}
    for name in SHIPPED:
        assert infos[name]["parameters"] > 100_000
        assert infos[name]["architecture"] == ("transformer" if name == "transformer" else name.split("-")[0])


@pytest.mark.parametrize("name", SHIPPED)
def test_translate_and_attention(client, name):
    translated = client.post("/api/translate", json={"text": TEXT, "model": name, "beam_size": 3}).json()
    check_translation(translated, name)
    body = client.post("/api/attention", json={"text": TEXT, "model": name}).json()
    info = next(m for m in client.get("/api/models").json() if m["name"] == name)
    check_attention(body, name, layers=info["layers"], heads=info["heads"])


RECURRENT = [n for n in SHIPPED if n != "transformer"]


@pytest.mark.skipif(not RECURRENT, reason="no recurrent checkpoint yet")
def test_gradients_on_a_long_input(client):
    response = client.post("/api/gradients", json={"text": TEXT, "length": 60, "models": RECURRENT})
    body = response.json()
    assert len(body["tokens"]) == 60 and [c["model"] for c in body["curves"]] == RECURRENT
    for curve in body["curves"]:
        assert len(curve["norm"]) == 60 and all(n >= 0 for n in curve["norm"]) and curve["norm"][0] > 0
    if any(n.startswith("lstm") for n in RECURRENT):
        gates = body["gates"]
        assert len(gates["units"]) == 48 and len(gates["forget"]) == 60 and len(gates["forget"][0]) == 48
