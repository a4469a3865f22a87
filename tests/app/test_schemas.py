"""The response models: each shape written once, and no key outside it, where it is made or sent."""

import ast
import importlib
import inspect
import json
import pkgutil

import pytest
from pydantic import BaseModel, ValidationError

from app import schemas
from app.routes import gradients, health, maps, predict, scores, translate
from app.schemas.base import NonFiniteAnswerError, Request, Response
from app.schemas.translation import Attention, AttentionMap
from tests.app.conftest import TEXT


def _modules():
    return [importlib.import_module(f"{schemas.__name__}.{module.name}")
            for module in pkgutil.iter_modules(schemas.__path__)]


def _responses() -> list[type[BaseModel]]:
    return [cls for module in _modules() for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, BaseModel) and cls.__module__ == module.__name__
            and not issubclass(cls, Request) and cls is not Response]


def test_a_chapter_s_shapes_are_its_own_module_and_no_list_names_them():
    """One module per chapter or endpoint family, imported by its own name (`from app.schemas.scaling
    import Scaling`): the package re-exports nothing, so a new chapter's shapes edit no shared file."""
    package = ast.parse(inspect.getsource(schemas))
    assert not [node for node in package.body if isinstance(node, ast.Import | ast.ImportFrom | ast.Assign)]
    assert {module.__name__.rsplit(".", 1)[1] for module in _modules()} >= {"base", "catalog", "scaling"}


def test_every_response_model_refuses_a_key_it_does_not_name():
    loose = [cls.__name__ for cls in _responses() if cls.model_config.get("extra") != "forbid"]
    assert not loose, f"response models that would let a misspelt key through: {loose}"


def test_a_service_that_misspells_a_field_fails_where_it_makes_the_answer():
    with pytest.raises(ValidationError, match="maps_"):
        Attention(model="m", translation="Hi.", source_tokens=["▁Salut"], target_tokens=["▁Hi"],
                          maps=[], maps_=[])


def test_the_openapi_schema_says_so(client):
    components = client.get("/openapi.json").json()["components"]["schemas"]
    documented = [cls.__name__ for cls in _responses() if cls.__name__ in components]
    assert len(documented) > 30
    assert all(components[name].get("additionalProperties") is False for name in documented)


def _attention(weight: float, text: str = "Hi.") -> Attention:
    return Attention(model="m", translation=text, source_tokens=["▁Salut"], target_tokens=["▁Hi"],
                             maps=[AttentionMap(kind="cross", layer=0, head=0, rows=["▁Hi"],
                                                        cols=["▁Salut"], weights=[[weight]])])


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), float("-inf")])
def test_an_answer_holding_a_non_finite_number_is_not_written(weight):
    """JSON has no NaN, and a null in its place would read as a number left out: the answer is
    refused with the error the app turns into a 503 that says so (tests/app/test_integrity.py)."""
    with pytest.raises(NonFiniteAnswerError, match="non-finite"):
        _attention(weight).to_json()


def test_an_answer_is_written_as_pydantic_and_json_would_write_it():
    for answer in (_attention(0.25), _attention(1.0, text="NaN, Infinity and -Infinity, as words")):
        assert json.loads(answer.to_json()) == answer.model_dump(mode="json")
    assert _attention(0.25).to_json() == _attention(0.25).model_dump_json()


def test_the_routes_send_the_answer_as_its_model_writes_it(client):
    """Every model answer is written once, by its model (app/routes/__init__.py), not dumped,
    validated again and encoded by FastAPI; GET /api/health, which sets its own status, is not."""
    routes = {route.path: route for module in (maps, translate, scores, gradients, predict, health)
              for route in module.router.routes}
    for path in ("/api/attention", "/api/translate", "/api/scores", "/api/gradients", "/api/predict"):
        assert hasattr(routes[path].endpoint, "__wrapped__"), path
    assert not hasattr(routes["/api/health"].endpoint, "__wrapped__")
    answer = client.post("/api/attention", json={"text": TEXT})
    assert answer.headers["content-type"] == "application/json; charset=utf-8"
    assert Attention.model_validate_json(answer.content).to_json(exclude_none=True) == answer.text
