"""The Elman recurrence (1990): read a sequence one token at a time into a hidden state.

    h_t = tanh(W [x_t ; h_{t-1}] + b)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


class ElmanCell(nn.Module):
    def __init__(self, d_input: int, d_hidden: int):
        super().__init__()
        self.d_hidden = d_hidden
        self.W = nn.Linear(d_input + d_hidden, d_hidden)  # acts on the concatenation [x_t ; h_{t-1}]

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        # x: (B, d_input), h: (B, d_hidden) -> (B, d_hidden)
        return torch.tanh(self.W(torch.cat([x, h], dim=-1)))


@dataclass
class RNNEncoding:
    hidden: torch.Tensor  # (B, T, H): h_t after each token
    final: torch.Tensor  # (B, H): h at each sequence's last real token


def run_cell(step, x: torch.Tensor, state, mask: torch.Tensor | None):
    """Unroll `step(x_t, state) -> state` over time; padded steps keep the previous state.

    `state` is a tensor or a tuple of tensors shaped (B, H). Returns the list of states per step.
    """
    states = []
    for t in range(x.size(1)):
        new = step(x[:, t], state)
        if mask is not None:
            keep = mask[:, t].unsqueeze(-1)  # (B, 1): 1 for a real token, 0 for padding
            new = _where(keep, new, state)
        state = new
        states.append(state)
    return states


def _where(keep: torch.Tensor, new, old):
    if isinstance(new, tuple):
        return tuple(_where(keep, n, o) for n, o in zip(new, old, strict=True))
    return torch.where(keep, new, old)


class RNNEncoder(nn.Module):
    def __init__(self, d_input: int, d_hidden: int):
        super().__init__()
        self.cell = ElmanCell(d_input, d_hidden)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, h0: torch.Tensor | None = None
    ) -> RNNEncoding:
        # x: (B, T, d_input), mask: (B, T) bool
        B = x.size(0)
        h = x.new_zeros(B, self.cell.d_hidden) if h0 is None else h0
        states = run_cell(self.cell, x, h, mask)
        return RNNEncoding(hidden=torch.stack(states, dim=1), final=states[-1])

    def step(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One token per sequence without padding (a decoding step): x (B, d_input), h (B, H) -> h
        twice, as the output and as the new state."""
        h = self.cell(x, h)
        return h, h
