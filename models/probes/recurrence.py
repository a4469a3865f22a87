"""The recurrence chapter: a recurrent encoder reads the sentence one token at a time into its hidden state.

    h_t = tanh(W [x_t ; h_(t-1)] + b)        (Elman 1990; h_(-1) = 0)

The probe runs the model's own encoder on the embedded pieces (eval mode: no dropout) and returns
the state after each token, how far each token moved it, ||h_t - h_(t-1)||, and its length ||h_t||.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from models.probes.gradients import most_varying_units

EQUATIONS = {  # by Capabilities.architecture
    "rnn": "h_t = tanh(W [x_t ; h_(t-1)] + b), h_(-1) = 0",
    "lstm": "c_t = f_t * c_(t-1) + i_t * tanh(W_g x_t + U_g h_(t-1) + b_g), h_t = o_t * tanh(c_t), "
            "h_(-1) = c_(-1) = 0 (gates i, f, o: sigmoids of the same form)",
}


@dataclass
class Reading:
    """The encoder's hidden states reading one sentence, float32 on the CPU."""

    states: torch.Tensor  # (T, H): h_t after each token
    change: torch.Tensor  # (T,): ||h_t - h_(t-1)||, h_(-1) = 0
    norm: torch.Tensor  # (T,): ||h_t||


def read(model, ids: list[int]) -> Reading:
    """`model`'s recurrent encoder (`model.encoder`, fed `model.embed`) reading `ids`; the model
    should be in eval mode, as the server loads it."""
    device = next(model.parameters()).device
    with torch.inference_mode():
        x = model.embed(torch.tensor([ids], device=device))  # (1, T, E)
        states = model.encoder(x).hidden[0].float().cpu()  # (T, H)
    before = torch.cat([states.new_zeros(1, states.size(1)), states[:-1]])  # h_(t-1), zeros first
    return Reading(states=states, change=(states - before).norm(dim=-1), norm=states.norm(dim=-1))


def most_varying(states: torch.Tensor, n: int) -> torch.Tensor:
    """states (T, H) -> the n units (ascending ids) whose state varies most over the tokens
    (population variance): the same rule as the gates' units of the gradients chapter."""
    return most_varying_units(states.unsqueeze(1), n)  # (T, 1, H): one "gate", the state itself
