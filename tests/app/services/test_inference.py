"""Decoding options checked against what the model has."""

from __future__ import annotations

import pytest

from app.runtime.errors import InvalidOptionError
from app.services.inference import DecodeOptions, model_options


def test_switches_become_the_transformer_s_keyword_arguments(registry):
    options = DecodeOptions(positional=False, heads_off=(("encoder", 1, 3), ("cross", 0, 0)))
    kwargs = model_options(registry.get("transformer"), options)
    assert kwargs["positional"] is False
    assert kwargs["head_mask"]["encoder"].tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert kwargs["head_mask"]["cross"].tolist() == [[0, 1, 1, 1], [1, 1, 1, 1]]
    assert model_options(registry.get("rnn"), DecodeOptions(beam_size=3)) == {}


@pytest.mark.parametrize(("name", "options", "field"), [
    ("lstm-dot", DecodeOptions(positional=False), "positional"),
    ("lstm-dot", DecodeOptions(heads_off=(("cross", 0, 0),)), "heads_off"),
    ("transformer", DecodeOptions(heads_off=(("cross", 2, 0),)), "heads_off"),
    ("transformer", DecodeOptions(heads_off=(("cross", 0, 4),)), "heads_off"),
    ("transformer", DecodeOptions(heads_off=(("memory", 0, 0),)), "heads_off"),
])
def test_a_switch_the_model_lacks_names_its_field(registry, name, options, field):
    with pytest.raises(InvalidOptionError) as error:
        model_options(registry.get(name), options)
    assert error.value.field == field
