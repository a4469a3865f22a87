"""Start-up: settings, device choice, a broken checkpoint that does not stop the others, and the
page, static files and vendored Plotly served beside the API."""

from __future__ import annotations

import gc
import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from fastapi.testclient import TestClient

from app.config import REPO_ROOT, Settings
from app.dependencies import get_registry
from app.main import create_app
from app.routes.pages import PLOTLY_JS
from app.runtime.loading import load_registry
from models.serving import step_of
from models.serving.layout import layout_of
from models.serving.precision import precision_of
from tests.app import first_requests
from tests.app.conftest import TEXT, tiny_settings
from tests.tiny import write_tiny_checkpoints


def test_settings_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_LAB_DEVICE", "cpu")
    monkeypatch.setenv("ATTENTION_LAB_MODELS", "rnn, transformer")
    monkeypatch.setenv("ATTENTION_LAB_CHECKPOINTS", str(tmp_path))
    monkeypatch.setenv("ATTENTION_LAB_MAX_CHARS", "80")
    monkeypatch.setenv("ATTENTION_LAB_MAX_GRADIENT_LENGTH", "50")
    settings = Settings()
    assert (settings.device, settings.models, settings.checkpoints, settings.max_chars) == (
        "cpu", ("rnn", "transformer"), tmp_path, 80)
    assert (settings.limits.max_chars, settings.limits.max_gradient_length) == (80, 50)
    assert settings.layout == "input-major"
    assert settings.model_nice == 0  # off: niced models starved while a browser drew (docs/SERVER.md)
    monkeypatch.setenv("ATTENTION_LAB_MODEL_NICE", "10")
    assert Settings().model_nice == 10
    monkeypatch.setenv("ATTENTION_LAB_MODEL_NICE", "20")
    with pytest.raises(ValueError, match="model_nice"):
        Settings()
    monkeypatch.delenv("ATTENTION_LAB_MODEL_NICE")
    monkeypatch.setenv("ATTENTION_LAB_MODELS", "rnn,../secrets")
    with pytest.raises(ValueError, match="folder names"):
        Settings()
    monkeypatch.setenv("ATTENTION_LAB_MODELS", "rnn")
    monkeypatch.setenv("ATTENTION_LAB_LAYOUT", "column-major")
    with pytest.raises(ValueError, match="input-major"):
        Settings()


def test_the_stored_layout_is_one_setting_away(tiny_checkpoints):
    """ATTENTION_LAB_LAYOUT=as-stored serves the checkpoint's own order, every model and snapshot
    alike; health says which one served."""
    for layout in ("as-stored", "input-major"):
        settings = tiny_settings(tiny_checkpoints, layout=layout)
        with TestClient(create_app(settings)) as client:
            numerics = client.get("/api/health").json()["numerics"]
            assert numerics == {"precision": "fp16-weights", "layout": layout}
            registry = client.app.state.registry
            models = [entry.model for entry in registry.models.values()]
            models += [registry.states.at_step("transformer", step) for step in (0, 1)]
            assert {layout_of(model) for model in models} == {layout}


def test_fp32_products_are_one_setting_away(tiny_checkpoints):
    """ATTENTION_LAB_PRECISION=fp32 multiplies the fp32 copies only; the default also gives every
    served weight fp16 holds exactly an fp16 copy (the tiny checkpoints are fp16 like the shipped
    ones); the snapshots too, and the seeded untrained model has none (fp16 does not hold it)."""
    for precision in ("fp32", "fp16-weights"):
        settings = tiny_settings(tiny_checkpoints, precision=precision)
        with TestClient(create_app(settings)) as client:
            assert client.get("/api/health").json()["numerics"]["precision"] == precision
            registry = client.app.state.registry
            served = {precision_of(entry.model) for entry in registry.models.values()}
            assert served == {precision}
            assert precision_of(registry.states.at_step("transformer", 0)) == "fp32"
            response = client.post("/api/attention", json={"text": TEXT, "model": "transformer"})
            assert response.status_code == 200


def test_the_recorded_decoding_step_is_one_setting_away_and_answers_the_same(tiny_checkpoints):
    """ATTENTION_LAB_STEP=graph (the default) records every model's decoding step, the shipped
    ones and the timeline's; python runs the Python step. Every number of an answer is the same."""
    answers = {}
    for step in ("graph", "python"):
        settings = tiny_settings(tiny_checkpoints, step=step)
        with TestClient(create_app(settings)) as client:
            registry = client.app.state.registry
            assert step_of(registry.models["transformer"].model) == step
            assert step_of(registry.states.at_step("transformer", 1)) == step
            assert step_of(registry.models["lstm-additive"].model) == step
            answers[step] = [client.post("/api/attention", json={"text": TEXT, "model": name})
                             .json() for name in ("transformer", "lstm-additive")]
            assert all(answer.get("maps") for answer in answers[step])
    assert answers["graph"] == answers["python"]


def test_models_load_on_the_chosen_device(tiny_checkpoints):
    with load_registry(tiny_checkpoints, ("lstm",), device="cpu") as registry:
        assert next(registry.models["lstm"].model.parameters()).device.type == "cpu"
        assert not registry.models["lstm"].model.training  # eval mode: dropout off


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU here")
def test_serves_on_the_gpu(tiny_checkpoints):
    with TestClient(create_app(Settings(checkpoints=tiny_checkpoints, device="cuda"))) as client:
        assert client.get("/api/health").json()["device"] == "cuda"
        body = {"text": "Bonjour.", "model": "transformer"}
        assert client.post("/api/attention", json=body).status_code == 200
        assert client.post("/api/gradients", json={"text": "Bonjour.", "length": 30}).status_code == 200


def test_broken_checkpoints_are_reported_and_the_others_serve(tmp_path):
    folder = write_tiny_checkpoints(tmp_path / "checkpoints", names=("lstm", "lstm-dot", "transformer"))
    (folder / "lstm-dot" / "model.safetensors").write_bytes(b"not a safetensors file")
    shutil.rmtree(folder / "transformer")
    (folder / "lstm" / "metrics.json").write_text("{truncated")  # a broken extra blanks only itself
    with TestClient(create_app(tiny_settings(folder))) as client:
        health = client.get("/api/health").json()
        assert health["status"] == "ok" and health["models"] == ["lstm"]
        assert set(health["unavailable"]) == {"rnn", "lstm-additive", "lstm-dot", "transformer"}
        assert "no checkpoint" in health["unavailable"]["transformer"]
        [lstm] = client.get("/api/models").json()
        assert lstm["name"] == "lstm" and lstm["metrics"]["bleu"] is None and lstm["curve_points"] == 3
        assert client.post("/api/translate", json={"text": "Bonjour.", "model": "lstm"}).status_code == 200
        missing = client.post("/api/translate", json={"text": "Bonjour.", "model": "transformer"})
        assert missing.status_code == 404 and "not loaded" in missing.json()["detail"]
        gradients = client.post("/api/gradients", json={"text": "Bonjour."}).json()
        assert [c["model"] for c in gradients["curves"]] == ["lstm"]


def test_no_model_at_all_is_degraded_not_dead(tmp_path):
    folder = write_tiny_checkpoints(tmp_path / "checkpoints", names=())
    with TestClient(create_app(tiny_settings(folder))) as client:
        answer = client.get("/api/health")
        health = answer.json()
        assert answer.status_code == 503  # readiness probes must not send traffic here
        assert health["status"] == "degraded" and health["models"] == []
        assert client.get("/api/models").json() == []
        response = client.post("/api/gradients", json={"text": "Bonjour."})
        assert response.status_code == 404


def test_a_missing_tokenizer_stops_start_up_with_a_clear_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_registry(tmp_path)


def test_registry_can_be_injected_through_dependency_overrides(tiny_checkpoints, tmp_path):
    """The FastAPI testing recipe: whatever the settings say, the handlers use the override."""
    app = create_app(Settings(checkpoints=write_tiny_checkpoints(tmp_path / "empty", names=()), device="cpu"))
    with load_registry(tiny_checkpoints, ("rnn",), device="cpu") as injected:
        app.dependency_overrides[get_registry] = lambda: injected
        with TestClient(app) as client:
            assert client.get("/api/health").json()["models"] == ["rnn"]


def test_an_unexpected_error_is_a_json_500_not_a_crash(tiny_checkpoints):
    """The safety net only: a bug (here a registry that is not one) still answers in JSON."""
    app = create_app(tiny_settings(tiny_checkpoints))
    app.dependency_overrides[get_registry] = lambda: object()
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/api/translate", json={"text": "Bonjour."})
        assert response.status_code == 500
        assert "internal error (AttributeError)" in response.json()["detail"]


def test_page_static_and_vendored_plotly(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    # Plotly is fetched by the page's first figure (static/js/plots.js), never by a tag in the page
    assert "/vendor/plotly.min.js" not in page.text
    assert "/vendor/plotly.min.js" in client.get("/static/js/plots.js").text
    plotly = client.get("/vendor/plotly.min.js", headers={"Accept-Encoding": "gzip"})
    assert plotly.status_code == 200 and "javascript" in plotly.headers["content-type"]
    assert "max-age=31536000" in plotly.headers["cache-control"]
    assert plotly.headers["content-encoding"] == "gzip" and len(plotly.content) > 1_000_000
    css = client.get("/static/css/app.css", headers={"Accept-Encoding": "gzip"})
    assert css.status_code == 200 and css.headers.get("content-encoding") == "gzip"
    assert client.get("/static/nope.js").status_code == 404


def test_computed_answers_are_compressed_fast_and_what_get_serves_harder(client):
    """gzip's header says how hard it worked (XFL: 4 for the fastest level, 0 for the middle ones,
    2 for the hardest): what POST computes for a request at level 1, what GET serves to every
    reader at level 5, Plotly (compressed once per process) at level 9 (app/guard.py)."""

    def raw(method, url, **kwargs):
        with client.stream(method, url, headers={"Accept-Encoding": "gzip"}, **kwargs) as answer:
            assert answer.status_code == 200 and answer.headers["content-encoding"] == "gzip"
            return b"".join(answer.iter_raw())

    computed = raw("POST", "/api/attention", json={"text": "le chat mange le pain et le chien dort"})
    catalog, plotly = raw("GET", "/api/models"), raw("GET", "/vendor/plotly.min.js")
    assert computed[:2] == catalog[:2] == plotly[:2] == b"\x1f\x8b"
    assert computed[8] == 4 and catalog[8] == 0 and plotly[8] == 2
    assert gzip.decompress(plotly) == PLOTLY_JS.read_bytes()
    again = raw("GET", "/vendor/plotly.min.js")
    assert again == plotly  # the same bytes for every reader
    assert json.loads(gzip.decompress(computed))["maps"]  # readable


def test_plotly_uncompressed_for_a_client_without_gzip(client):
    plain = client.get("/vendor/plotly.min.js", headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and "content-encoding" not in plain.headers
    assert plain.content == PLOTLY_JS.read_bytes() and "max-age=31536000" in plain.headers["cache-control"]


@pytest.mark.parametrize("preset, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_at_once_in_the_server_unless_told_otherwise(preset, expected):
    """app/__init__.py sets the policy before anything of the server loads torch (libgomp reads it
    once, when it loads), and keeps a value from the environment."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if preset:
        env["OMP_WAIT_POLICY"] = preset
    probe = ("import sys, os, app; before = 'torch' in sys.modules; import app.main; "
             "print(before, 'torch' in sys.modules, os.environ['OMP_WAIT_POLICY'])")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True,
                         cwd=REPO_ROOT, timeout=120)
    assert out.stdout.split() == ["False", "True", expected]


@pytest.mark.slow
def test_a_fresh_servers_first_requests_all_at_once(tmp_path):
    """Every endpoint that differentiates, traces or records a graph, asked at once as a fresh
    server's first requests (in a new interpreter): no 5xx, and no request parses Python source, so
    none runs torch's lazy first-use set-up (done at start-up instead: on CPython 3.11 two threads
    parsing at once can fail, and did, as a 500 from /api/gradients). The count of parses is the
    exact check: a 500 comes only when two of them meet, so one run is enough, where runs of the
    requests alone could only make the meeting likely."""
    folder = write_tiny_checkpoints(tmp_path / "checkpoints")
    shutil.copytree(REPO_ROOT / "checkpoints" / "long-lag", folder / "long-lag")
    done = subprocess.run([sys.executable, "-m", "tests.app.first_requests", str(folder)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["statuses"]) == len(first_requests.REQUESTS)
    assert [s for s in report["statuses"] if s[1] != 200] == []
    assert report["parses"] == 0


def test_the_settings_and_the_schemas_load_without_torch():
    """app/config.py and app/schemas/ are read by tools that never run a model (a client's
    generator, a linter of the settings): importing them must not load torch."""
    code = "import sys, app.config, app.schemas; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def test_what_start_up_built_is_left_out_of_garbage_collection_while_the_app_runs(tiny_checkpoints):
    """Full collections walk every tracked object holding the GIL: start-up's objects (models,
    vocabulary, schemas) are frozen while the app serves, and collectable again once it stops."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints))) as client:
        assert client.get("/api/health").status_code == 200
        assert gc.get_freeze_count() > 10_000
    assert gc.get_freeze_count() == 0
