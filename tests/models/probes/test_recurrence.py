"""The recurrence chapter's probe against the encoder itself and the definitions of change and norm."""

from __future__ import annotations

import pytest
import torch

from models.architectures import build
from models.config import Seq2SeqConfig
from models.probes.recurrence import most_varying, read

IDS = [5, 9, 4, 7, 11, 6]


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_the_states_are_the_encoder_s_own_hidden_states(cell):
    torch.manual_seed(0)
    model = build(Seq2SeqConfig(vocab_size=50, cell=cell, d_embed=8, d_hidden=16)).eval()
    reading = read(model, IDS)
    with torch.no_grad():
        hidden = model.encoder(model.embed(torch.tensor([IDS]))).hidden[0]
    assert torch.equal(reading.states, hidden)
    units = most_varying(reading.states, 5)
    assert torch.equal(reading.states[:, units], hidden[:, units])


def test_the_rnn_state_is_the_equation():
    torch.manual_seed(1)
    model = build(Seq2SeqConfig(vocab_size=50, cell="rnn", d_embed=8, d_hidden=16)).eval()
    cell = model.encoder.cell
    h = torch.zeros(16)
    with torch.no_grad():
        for t, x in enumerate(model.embed(torch.tensor(IDS))):
            h = torch.tanh(cell.W.weight @ torch.cat([x, h]) + cell.W.bias)
            torch.testing.assert_close(read(model, IDS).states[t], h)


def test_change_and_norm():
    torch.manual_seed(2)
    model = build(Seq2SeqConfig(vocab_size=50, cell="rnn", d_embed=8, d_hidden=16)).eval()
    reading = read(model, IDS)
    s = reading.states
    assert reading.change[0] == s[0].norm()  # h_(-1) = 0
    torch.testing.assert_close(reading.change[1:], torch.stack([(s[t] - s[t - 1]).norm() for t in range(1, 6)]))
    torch.testing.assert_close(reading.norm, torch.stack([row.norm() for row in s]))


def test_the_units_shown_vary_most_over_the_tokens():
    states = torch.zeros(4, 6)
    states[:, 5] = torch.tensor([1.0, -1.0, 1.0, -1.0])
    states[:, 2] = torch.tensor([0.3, -0.3, 0.3, -0.3])
    states[:, 0] = 0.9  # large but constant: not shown
    assert most_varying(states, 2).tolist() == [2, 5]
    assert most_varying(states, 99).tolist() == list(range(6))
