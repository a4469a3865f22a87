"""The app's own OpenAPI schema against the app, in-process (ASGI, no network): schemathesis 4.x
generates requests for every operation (valid and not) on the tiny models and runs all its checks:
no 5xx, every status code and body documented, valid requests accepted, invalid ones refused."""

from __future__ import annotations

import time

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.core.failures import FailureGroup
from schemathesis.openapi.checks import RejectedPositiveData

from app import chapters
from app.main import create_app
from tests.app.conftest import tiny_settings

# Checked by the server, not by the schema (they depend on the settings or on the model asked for),
# each said in its field's description and refused as 422 naming the field: a schema-valid request
# refused for one of these is what the schema promises, not a "valid request rejected".
SERVER_CHECKED = {"text", "length", "lengths", "lag", "layer", "head", "heads_off", "model", "models",
                  "permutation", "positional", "prefix", "reference", "row"}
# The routes whose schema bounds allow seconds of work per request (POST /api/scaling: 12 widths up to
# 1,024, 32 keys; POST /api/train: a default run trains a minute; POST /api/teach: a run is a process
# of its own, seconds each): 20 such cases would take minutes of the suite. Their bounds and bad input
# are tested with their services (tests/app/services/test_scaling.py, tests/app/test_live.py,
# tests/app/test_teach_route.py).
SLOW = {f"{'GET' if r.get else 'POST'} {r.path}" for r in chapters.routes() if r.heavy}
EXAMPLES = 20  # per operation, all checks: about 20 operations in well under a minute on the tiny models


@pytest.fixture(scope="module")
def api_schema(tiny_checkpoints):
    # a short output limit: random models rarely end a sentence; the cache off so every case works
    app = create_app(tiny_settings(tiny_checkpoints, max_target_tokens=8, queue_limit=64))
    with TestClient(app):  # runs the lifespan: the models load
        yield schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.mark.slow
def test_every_operation_keeps_the_schema_s_promises(api_schema):
    """Each operation in turn (schemathesis' pytest plugin does not load under this pytest), all
    checks; the failures of every operation are gathered before the test fails."""
    failures, timings, operations = {}, {}, 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        operations += 1
        if operation.label in SLOW:
            continue

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case):
            response = case.call()
            try:
                case.validate_response(response)
            except FailureGroup as group:
                if not all(isinstance(f, RejectedPositiveData) for f in group.exceptions) \
                        or not refused_by_the_server_s_own_check(response):
                    raise

        started = time.monotonic()
        try:
            check()
        except (Exception, BaseExceptionGroup) as error:  # reported together below
            failures[operation.label] = str(error)[:1500]
        timings[operation.label] = round(time.monotonic() - started, 1)
    print("seconds per operation:", timings)
    assert operations - len(SLOW) >= 15
    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())


def refused_by_the_server_s_own_check(response) -> bool:
    if response.status_code != 422:
        return False
    detail = response.json()["detail"]
    return all(e["type"] == "value_error" and e["loc"][:1] == ["body"] and e["loc"][1] in SERVER_CHECKED
               for e in detail)
