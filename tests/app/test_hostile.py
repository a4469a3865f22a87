"""A hostile-input corpus through every POST endpoint (read from the app's own OpenAPI schema, so a
new endpoint is covered without a word here): empty and blank text, 500 and 501 characters before
and after NFKC, NUL and control characters, lone surrogates, right-to-left text, emoji, HTML and
script, a 10,000-character word, wrong types in every field, NaN and infinities in every field
(JSON has none; Python's parser reads them), 10,000-deep nesting, invalid UTF-8 and an oversized
body. Whatever is sent: never a 5xx, only status codes the endpoint documents, and no refusal
repeats more than 64 characters of what it was sent (app.main.ECHO_CHARS).

On the tiny models (tests/tiny.py) with a short output limit: a few hundred requests in seconds."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app import chapters
from app.main import ECHO_CHARS, create_app
from app.main import app as shipped_app
from tests.app.conftest import TEXT, tiny_settings

SCHEMA = shipped_app.openapi()  # the routes and codes only: no model is loaded for this
NFKC_WIDE = "\ufb01"  # "ﬁ": one character, two ("fi") after NFKC
TEXTS = {
    "empty": "",
    "blank": " \t\n\r\u00a0\u3000 ",
    "500": "b" * 500,
    "501": "b" * 501,
    "500 after NFKC": NFKC_WIDE * 250,
    "501 after NFKC": NFKC_WIDE * 250 + "b",
    "500 before NFKC, 1000 after": NFKC_WIDE * 500,
    "501 before NFKC": NFKC_WIDE * 501,
    "NUL and controls": "Je\u0000 mange\u0001\u0007\u001b[31m du\u007f\u0085 pain.\u0000",
    "only controls": "\u0000\u0001\u0002\u001f\u007f",
    "right to left": "\u202eélbat al ruS\u202c مرحبا بالعالم שלום",
    "emoji": "Je mange 🍞 avec du 🧀 \U0001f3f3\ufe0f\u200d\U0001f308 😀" * 3,
    "html and script": "<script>alert('x')</script><img src=x onerror=alert(1)>{{7*7}}",
    "10,000-character word": "x" * 10_000,
    "10,000 emoji": "😀" * 10_000,
}
# Bodies no JSON object of the right shape can give, as raw bytes.
RAW = {
    "lone surrogate": b'{"text": "a\\ud800b"}',
    "lone low surrogate": b'{"text": "\\udfff\\udfff"}',
    "invalid UTF-8": b'{"text": "caf\xe9 \xff\xfe \xc0\xaf"}',
    "not JSON": b"{text: Bonjour",
    "empty body": b"",
    "JSON null": b"null",
    "a list, not an object": b'["Je mange du pain."]',
    "10,000 nested lists": b"[" * 10_000 + b"]" * 10_000,
    "10,000 nested lists as text": b'{"text": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
    "10,000 nested objects": b'{"a": ' * 10_000 + b"1" + b"}" * 10_000,
    "oversized": json.dumps({"text": "a" * 70_000}).encode(),
}
# A value of another type for each JSON Schema type, long enough that echoing it would show.
WRONG = {"string": [12345, None, True, ["x" * 200], {"x": "y" * 200}],
         "integer": ["7" * 200, 2.5, [1] * 200, None], "number": ["x" * 200, [1.0]],
         "boolean": ["yes" * 100, 1], "array": ["x" * 200, {"x": 1}, 3], "object": ["x" * 200, [1]]}
# Keep the valid requests quick on the tiny models; anything not named gets only the text.
QUICK = {route.path: route.light for route in chapters.routes() if route.light}


def _operations() -> dict[str, dict]:
    """POST path -> {"statuses": documented codes, "schema": request body schema, "required": bool}."""
    operations = {}
    for path, methods in SCHEMA["paths"].items():
        if "post" not in methods:
            continue
        operation = methods["post"]
        body = operation.get("requestBody", {})
        schema = body.get("content", {}).get("application/json", {}).get("schema", {})
        refs = [schema, *schema.get("anyOf", [])]
        names = [r["$ref"].rsplit("/", 1)[1] for r in refs if "$ref" in r]
        operations[path] = {"statuses": {int(code) for code in operation["responses"]},
                            "schema": SCHEMA["components"]["schemas"][names[0]] if names else {},
                            "required": body.get("required", False)}
    return operations


OPERATIONS = _operations()


def _types(field: dict) -> set[str]:
    return {f["type"] for f in [field, *field.get("anyOf", [])] if "type" in f}


def _cases(path: str, operation: dict) -> list[tuple[str, bytes]]:
    """(name, raw body) of every hostile request for one endpoint."""
    properties = operation["schema"].get("properties", {})
    base = {name: 4 for name in operation["schema"].get("required", []) if name != "text"} | QUICK.get(path, {})
    cases = []
    if "text" in properties:
        base = {"text": TEXT} | base
        cases += [(f"text: {name}", json.dumps(base | {"text": text}).encode()) for name, text in TEXTS.items()]
        cases += [(name, raw) for name, raw in RAW.items()]
    else:  # no text: only what cannot be valid (an empty body may be, e.g. POST /api/timing)
        cases += [(name, raw) for name, raw in RAW.items() if b"text" not in raw and name != "empty body"
                  and not (name == "JSON null" and not operation["required"])]
    for field, spec in properties.items():
        # JSON's \ud800 escapes (json.dumps writes them so): no character, so no UTF-8 to echo them in
        if _types(spec) & {"string", "array"} and field != "text":
            surrogates = "\ud800" * 70 if "string" in _types(spec) else ["\udfff" * 70]
            cases.append((f"{field}: lone surrogates", json.dumps(base | {field: surrogates}).encode()))
        for kind in sorted(_types(spec)):
            cases += [(f"{field}: {kind} as {type(value).__name__}", json.dumps(base | {field: value}).encode())
                      for value in WRONG.get(kind, []) if not (value is None and "null" in _types(spec))]
    cases.append(("unknown field", json.dumps(base | {"x" * 200: "y" * 200}).encode()))
    return cases + [(name, raw) for name, raw, _ in _non_finite_cases(path, operation)]


NON_FINITE = ("NaN", "Infinity", "-Infinity")  # what json.dumps writes for float("nan"), ...


def _non_finite_cases(path: str, operation: dict) -> list[tuple[str, bytes, list]]:
    """(name, raw body, the place a 422 must name) for NaN and the infinities in every field of an
    otherwise valid body, as the whole body, and deep inside a list."""
    properties = operation["schema"].get("properties", {})
    base = {name: 4 for name in operation["schema"].get("required", []) if name != "text"} | QUICK.get(path, {})
    base = ({"text": TEXT} if "text" in properties else {}) | base
    cases = []
    for literal in NON_FINITE:
        for field in [*properties, "unknown"]:
            raw = json.dumps(base | {field: "@"}).replace('"@"', literal).encode()
            cases.append((f"{field}: {literal}", raw, ["body", field]))
        cases.append((f"the body: {literal}", literal.encode(), ["body"]))
        cases.append((f"nested: {literal}", json.dumps({"a": [1, {"b": "@"}]}).replace('"@"', literal).encode(),
                      ["body", "a", 1, "b"]))
    return cases


def _inputs(raw: bytes) -> list[str]:
    """The strings a body carries that are long enough to be echoed (the whole body when it is not
    JSON: its JSON text would match a 64-character echo with its opening quote)."""
    strings = []
    try:
        stack = [json.loads(raw)]
    except (ValueError, RecursionError):
        return [raw.decode("utf-8", "replace")]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
    return [s for s in strings if len(s) > ECHO_CHARS]


def _echoes(answer: str, sent: list[str]) -> str | None:
    """A slice of ECHO_CHARS + 1 characters of something sent that the answer repeats, if any."""
    for value in sent:
        for start in range(0, len(value) - ECHO_CHARS):
            piece = value[start:start + ECHO_CHARS + 1]
            if piece in answer:
                return piece
    return None


@pytest.fixture(scope="module")
def hostile_client(tiny_checkpoints):
    """The tiny models with a short output limit; a 500 is an answer here (collected), not a raise."""
    app = create_app(tiny_settings(tiny_checkpoints, max_target_tokens=12))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def test_every_post_endpoint_is_covered():
    assert {"/api/translate", "/api/attention", "/api/compare", "/api/gradients"} <= set(OPERATIONS)
    assert len(OPERATIONS) >= 12


@pytest.mark.parametrize("path", sorted(OPERATIONS))
def test_hostile_input_never_5xx_never_undocumented_never_echoed(hostile_client, path):
    operation = OPERATIONS[path]
    failures = []
    for name, raw in _cases(path, operation):
        answer = hostile_client.post(path, content=raw, headers={"Content-Type": "application/json"})
        status = answer.status_code
        if status >= 500 or status not in operation["statuses"]:
            failures.append(f"{name}: {status} {answer.text[:200]}")
        elif status >= 400:
            body = answer.text
            decoded = json.dumps(answer.json(), ensure_ascii=False)  # escapes undone
            piece = _echoes(body, _inputs(raw)) or _echoes(decoded, _inputs(raw))
            if piece:
                failures.append(f"{name}: {status} echoes {piece[:20]!r}... ({len(body)} bytes)")
    assert not failures, f"{path}:\n" + "\n".join(failures)


@pytest.mark.parametrize("path", sorted(OPERATIONS))
def test_nan_and_infinities_are_bad_input_naming_the_place(hostile_client, path):
    """422 before any work, naming where the number is: never the 503 of a model's own NaN."""
    failures = []
    for name, raw, loc in _non_finite_cases(path, OPERATIONS[path]):
        answer = hostile_client.post(path, content=raw, headers={"Content-Type": "application/json"})
        detail = answer.json()["detail"] if answer.status_code == 422 else None
        if not detail or detail[0]["loc"] != loc or detail[0]["input"] not in NON_FINITE:
            failures.append(f"{name}: {answer.status_code} {answer.text[:200]}")
    assert not failures, f"{path}:\n" + "\n".join(failures)


def test_the_length_limits_hold_before_and_after_nfkc(hostile_client):
    def status(text):
        return hostile_client.post("/api/translate", json={"text": text, "model": "rnn"}).status_code

    assert [status(TEXTS[name]) for name in ("500", "501", "500 after NFKC", "501 after NFKC",
                                              "500 before NFKC, 1000 after", "501 before NFKC")] == \
        [200, 422, 200, 422, 422, 422]
