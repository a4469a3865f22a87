"""The whole app on tiny random models (tests/tiny.py) saved as real checkpoint folders, so the API
is tested end to end (lifespan, loading, routes) in seconds and without the trained weights."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.runtime.loading import load_registry
from tests.tiny import write_tiny_checkpoints

TEXT = "Je mange du pain."  # the sentence the tests send when any will do (five pieces)


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory) -> Path:
    return write_tiny_checkpoints(tmp_path_factory.mktemp("checkpoints"))


def tiny_settings(folder: Path, **overrides) -> Settings:
    """Two lanes for /api/compare whatever the machine's cores, so its tests see the same order; no
    shares (every test asks from one address; tests/app/test_shares.py turns them on); compares
    stepped on the model thread, not in stepper processes, whose start would make the path a request
    takes depend on the time it comes (tests/app/runtime/test_stepper_client.py and the browser tests
    run them)."""
    return Settings(**{"checkpoints": folder, "device": "cpu", "cache_size": 0, "lanes": 2, "shares": False,
                       "step_processes": 0, "teach_spare": False,
                       **overrides})


# A served app (bench/serving.py's `serve`) without the start-up work a test of something else
# would share its cores with: no stepper processes, no spare teaching process, no answers ahead
LEAN_SERVER = {"ATTENTION_LAB_STEP_PROCESSES": "0", "ATTENTION_LAB_TEACH_SPARE": "false",
               "ATTENTION_LAB_CACHE_SIZE": "0"}


@pytest.fixture(scope="session")
def client(tiny_checkpoints) -> Iterator[TestClient]:
    """The whole app on the tiny models, cache off so every request does the work."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints))) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def short_client(tiny_checkpoints) -> Iterator[TestClient]:
    """Random models rarely end a sentence; a short output limit keeps the hostile table quick."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints, max_target_tokens=12))) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def registry(tiny_checkpoints):
    """Every tiny model, cache off, on its own model thread (closed after the session)."""
    registry = load_registry(tiny_checkpoints, device="cpu", cache_size=0)
    yield registry
    registry.close()


@pytest.fixture
def cached_registry(tiny_checkpoints):
    """Two tiny models with the result cache on, and their own model thread (closed after)."""
    registry = load_registry(tiny_checkpoints, ("lstm", "transformer"), device="cpu", cache_size=8)
    yield registry
    registry.close()
