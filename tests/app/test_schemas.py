"""The response models: each shape written once, and no key outside it, where it is made or sent."""

import inspect

import pytest
from pydantic import BaseModel, ValidationError

from app import schemas


def _responses() -> list[type[BaseModel]]:
    return [cls for _, cls in inspect.getmembers(schemas, inspect.isclass)
            if issubclass(cls, BaseModel) and cls.__module__ == schemas.__name__
            and not issubclass(cls, schemas.Request) and cls is not schemas.Response]


def test_every_response_model_refuses_a_key_it_does_not_name():
    loose = [cls.__name__ for cls in _responses() if cls.model_config.get("extra") != "forbid"]
    assert not loose, f"response models that would let a misspelt key through: {loose}"


def test_a_service_that_misspells_a_field_fails_where_it_makes_the_answer():
    with pytest.raises(ValidationError, match="maps_"):
        schemas.Attention(model="m", translation="Hi.", source_tokens=["▁Salut"], target_tokens=["▁Hi"],
                          maps=[], maps_=[])


def test_the_openapi_schema_says_so(client):
    components = client.get("/openapi.json").json()["components"]["schemas"]
    documented = [cls.__name__ for cls in _responses() if cls.__name__ in components]
    assert len(documented) > 30
    assert all(components[name].get("additionalProperties") is False for name in documented)
