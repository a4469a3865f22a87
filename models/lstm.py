"""Long short-term memory (Hochreiter & Schmidhuber 1997, with the forget gate of Gers et al.).

    i_t = sigma(W_i x_t + U_i h_{t-1} + b_i)      input gate: how much new content to write
    f_t = sigma(W_f x_t + U_f h_{t-1} + b_f)      forget gate: how much old memory to keep
    g_t = tanh (W_g x_t + U_g h_{t-1} + b_g)      candidate content
    o_t = sigma(W_o x_t + U_o h_{t-1} + b_o)      output gate: how much memory to show
    c_t = f_t * c_{t-1} + i_t * g_t               the cell state: an additive path through time
    h_t = o_t * tanh(c_t)

The additive update of c_t is why gradients survive: dc_t/dc_{t-1} = f_t, no squashing matrix.
The four gates are computed by one matrix each for x and h, stacked in PyTorch's order (i, f, g, o)
so the weights can be checked against `torch.nn.LSTMCell`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.rnn import run_cell


@dataclass
class LSTMStep:
    h: torch.Tensor  # (B, H)
    c: torch.Tensor  # (B, H)
    gates: torch.Tensor  # (B, 3, H): input, forget, output activations


class LSTMCell(nn.Module):
    def __init__(self, d_input: int, d_hidden: int, forget_bias: float = 1.0):
        super().__init__()
        self.d_hidden = d_hidden
        self.W = nn.Linear(d_input, 4 * d_hidden)  # W_i, W_f, W_g, W_o stacked
        self.U = nn.Linear(d_hidden, 4 * d_hidden)  # U_i, U_f, U_g, U_o stacked
        with torch.no_grad():  # start by remembering: a common trick (Jozefowicz et al. 2015)
            self.W.bias[d_hidden : 2 * d_hidden].fill_(forget_bias)
            self.U.bias[d_hidden : 2 * d_hidden].zero_()

    def step(self, wx: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> LSTMStep:
        """One step given the input projection `wx = W x_t` (precomputed for the whole sequence)."""
        i, f, g, o = (wx + self.U(h)).chunk(4, dim=-1)  # each (B, H)
        i, f, o = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o)
        c = f * c + i * torch.tanh(g)
        h = o * torch.tanh(c)
        return LSTMStep(h=h, c=c, gates=torch.stack([i, f, o], dim=1))

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]) -> LSTMStep:
        # x: (B, d_input); state: (h, c), each (B, H)
        return self.step(self.W(x), *state)


@dataclass
class LSTMEncoding:
    hidden: torch.Tensor  # (B, T, H): h_t per token
    cell: torch.Tensor  # (B, T, H): c_t per token
    gates: torch.Tensor  # (B, T, 3, H): input, forget, output gates per token
    final: tuple[torch.Tensor, torch.Tensor]  # (h, c) at each sequence's last real token


class LSTMEncoder(nn.Module):
    def __init__(self, d_input: int, d_hidden: int):
        super().__init__()
        self.cell = LSTMCell(d_input, d_hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, state=None) -> LSTMEncoding:
        # x: (B, T, d_input), mask: (B, T) bool; state: optional (h0, c0)
        B, T, _ = x.shape
        if state is None:
            zeros = x.new_zeros(B, self.cell.d_hidden)
            state = (zeros, zeros)
        wx = self.cell.W(x)  # (B, T, 4H): the input half of every gate, in one matmul
        gates = []

        def step(wx_t, hc):
            out = self.cell.step(wx_t, *hc)
            gates.append(out.gates)
            return out.h, out.c

        states = run_cell(step, wx, state, mask)
        return LSTMEncoding(
            hidden=torch.stack([h for h, _ in states], dim=1),
            cell=torch.stack([c for _, c in states], dim=1),
            gates=torch.stack(gates, dim=1),
            final=states[-1],
        )

    def step(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        """One token per sequence without padding (a decoding step): x (B, d_input), state (h, c)
        -> h (B, H) and the new state (h, c)."""
        out = self.cell(x, state)
        return out.h, (out.h, out.c)
