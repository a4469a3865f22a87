"""A recurrent encoder-decoder's decoding step recorded once as a TorchScript graph, as graph.py does
for the Transformer.

A decoding step of models/seq2seq.py (embed one token, one cell step, the attention over the
encoder states, the output projection) is twenty to forty small PyTorch calls through a dozen
modules; from Python each also pays the interpreter and the module calls. `RecurrentStepGraph` runs
`Seq2Seq.decode` once under torch.jit.trace, which records the ATen calls it makes, and then makes
those calls itself: the same calls on the same tensors in the same order, so the same logits, maps
and states, bit for bit (tests/models/serving/test_recurrent.py). bench/floor.py's compare, four of
whose five models are recurrent, times what it buys.

The recording is one path: one token per sentence, nothing differentiated, eval mode; a model with
attention has a second recording with a padding mask over the source, which sentences of several
lengths decoded together need (models/serving/batch.py). `ServedSeq2Seq.decode` takes them only
there and runs the model's own `decode` otherwise.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass

import torch

from models.seq2seq import Seq2Seq, Seq2SeqMemory
from models.serving.graph import frozen
from models.serving.step import adopt, as_recorded
from models.tokenizer import BOS_ID, PAD_ID


class ServedSeq2Seq(Seq2Seq):
    """A trained Seq2Seq, sharing its modules and Parameters, whose `decode` of one token per
    sentence in eval mode runs `graph` (a RecurrentStepGraph), and whose encoder reads one unpadded
    sentence through `encoder_graph` (an EncoderStepGraph), when it has them. Built by
    models.serving.served after the weights' layout and copies are final."""

    def __init__(self, model: Seq2Seq):
        adopt(self, model)
        self.graph = None  # the recorded step, set by models.serving.served
        self.encoder_graph = None  # the encoder's recorded step, set with it

    def encode_with_internals(self, src: torch.Tensor):
        if (self.encoder_graph is None or not as_recorded(self) or src.size(0) != 1
                or bool((src == PAD_ID).any())):  # off the path the encoder's step was recorded for
            return super().encode_with_internals(src)
        hidden, final, gates = self.encoder_graph.unroll(self.drop(self.embed(src)), src[0].tolist())
        projected = None if self.attention is None else self.attention.project(hidden)
        memory = Seq2SeqMemory(keys=hidden, mask=None, state=final, projected=projected)
        return memory, {"encoder_hidden": hidden, "encoder_gates": gates}

    def decode(self, memory: Seq2SeqMemory, tgt_in: torch.Tensor, cache=None):
        if self.graph is None or not as_recorded(self) or tgt_in.size(1) != 1:  # off the recorded paths
            return super().decode(memory, tgt_in, cache)
        return self.graph(memory, tgt_in, cache)


class RecurrentStepGraph:
    """The decoding step of one ServedSeq2Seq, recorded on a one-sentence example."""

    def __init__(self, model: ServedSeq2Seq):
        self.lstm = model.config.cell == "lstm"
        self.attention = model.attention is not None
        with frozen(model), torch.no_grad():
            self.run = self._record(model)
            # without attention a padding mask changes nothing the step reads: no second recording
            self.masked = self._record(model, masked=True) if self.attention else None

    def __call__(self, memory: Seq2SeqMemory, tgt_in: torch.Tensor, cache=None):
        """`Seq2Seq.decode` of one token per sentence: logits (B, 1, V), {"cross": (B, 1, 1, 1, S)}
        ({} without attention) and the state after the token."""
        state = memory.state if cache is None else cache
        run, inputs = self.run, self._inputs(memory)
        if memory.mask is not None and self.masked is not None:
            run, inputs = self.masked, (*inputs, memory.mask)
        logits, weights, *final = run(tgt_in, *inputs, *(state if self.lstm else (state,)))
        return logits, {"cross": weights} if self.attention else {}, tuple(final) if self.lstm else final[0]

    def _inputs(self, memory: Seq2SeqMemory) -> tuple[torch.Tensor, ...]:
        """What the step reads of the memory: the encoder states, and the additive attention's
        projected keys where it has them."""
        return (memory.keys,) if memory.projected is None else (memory.keys, memory.projected)

    def _record(self, model: ServedSeq2Seq, masked: bool = False):
        example = Seq2Seq.encode(model, torch.tensor([[BOS_ID, BOS_ID]], device=model.out_bias.device))
        inputs = self._inputs(example)
        if masked:  # (B, S), True on real source pieces: the example's second piece as padding
            inputs = (*inputs, torch.tensor([[True, False]], device=model.out_bias.device))
        keyed = len(inputs)

        def decode_step(tgt_in, *tensors):
            keys = tensors[0]
            projected = tensors[1] if keyed - masked == 2 else None
            mask = tensors[keyed - 1] if masked else None
            state = tuple(tensors[keyed:]) if self.lstm else tensors[keyed]
            memory = Seq2SeqMemory(keys=keys, mask=mask, state=state, projected=projected)
            logits, weights, final = Seq2Seq.decode(model, memory, tgt_in)
            # a placeholder for the maps of a model without attention: a traced function returns tensors
            return logits, weights.get("cross", logits), *(final if self.lstm else (final,))

        state = example.state if self.lstm else (example.state,)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.jit: see graph.available
            # decode's one-token branch is recorded as taken: ServedSeq2Seq.decode sends only that path
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
            return torch.jit.trace(decode_step, (torch.tensor([[BOS_ID]]), *inputs, *state), check_trace=False)


# Sentence prefixes whose encoder states are kept per model (`EncoderStepGraph.unroll`): a few
# hundred, a few dozen sentences' worth, which covers the keys typed in the last half second or so
PREFIXES_KEPT = 512


@dataclass
class _Unrolled:
    """One sentence's unrolling: each position's step input (1, S, .) and its outputs, per position."""

    inputs: torch.Tensor
    hidden: list[torch.Tensor]
    cells: list[torch.Tensor]  # the LSTM's c per position ([] for an Elman encoder)
    gates: list[torch.Tensor]


class EncoderStepGraph:
    """One token of a recurrent encoder (models/rnn.py, models/lstm.py) recorded, and the encoder's
    unrolling over one unpadded sentence with it: per token one recorded call instead of the cell's
    ten-odd calls from Python. The same calls on the same tensors: the same states and gates, bit
    for bit (a padding mask of all True, which the derivation applies, selects every new state).

    A reader who types sends the sentence again at every key, each time with the same first pieces.
    A position's state depends only on the inputs up to it, so the unrolling starts after the longest
    prefix read lately whose step inputs are equal, bit for bit, to this sentence's (the inputs
    compared, not only the pieces: an input row computed in a product of another length could differ
    in its last bit); the states taken are those its own steps would compute, the same numbers."""

    def __init__(self, model: ServedSeq2Seq):
        self.cell = model.encoder.cell
        self.lstm = model.config.cell == "lstm"
        H = self.cell.d_hidden
        like = next(model.parameters())
        state = like.new_zeros(1, H)
        with frozen(model), torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.jit: see graph.available
            if self.lstm:
                def token(wx_t, h, c):
                    out = self.cell.step(wx_t, h, c)
                    return out.h, out.c, out.gates

                self.run = torch.jit.trace(token, (like.new_zeros(1, 4 * H), state, state), check_trace=False)
            else:
                x = like.new_zeros(1, model.config.d_embed)
                self.run = torch.jit.trace(self.cell, (x, state), check_trace=False)
        # prefix -> the latest sentence unrolled with it (see the class's docstring); lanes may share a model
        self._recent: OrderedDict[tuple[int, ...], _Unrolled] = OrderedDict()
        self._lock = threading.Lock()

    def unroll(self, x: torch.Tensor, ids: list[int] | None = None):
        """x (1, S, d_embed), the embedded sentence, and its piece ids (None: nothing kept or reused)
        -> hidden (1, S, H), the final state (h, or (h, c)) and the gates (1, S, 3, H), None for an
        Elman encoder."""
        # each position's step input: the LSTM's input half of every gate in one matmul, as its encoder does
        inputs = self.cell.W(x) if self.lstm else x  # (1, S, .)
        done = self._resumed(ids, inputs)
        hidden, cells, gates = done.hidden, done.cells, done.gates
        h = hidden[-1] if hidden else x.new_zeros(1, self.cell.d_hidden)
        c = cells[-1] if cells else h
        for t in range(len(hidden), x.size(1)):
            if self.lstm:
                h, c, g = self.run(inputs[:, t], h, c)
                cells.append(c)
                gates.append(g)
            else:
                h = self.run(inputs[:, t], h)
            hidden.append(h)
        self._keep(ids, _Unrolled(inputs, hidden, cells, gates))
        if not self.lstm:
            return torch.stack(hidden, dim=1), h, None
        return torch.stack(hidden, dim=1), (h, c), torch.stack(gates, dim=1)

    def _resumed(self, ids: list[int] | None, inputs: torch.Tensor) -> _Unrolled:
        """The outputs of the longest prefix of `ids` read lately with equal step inputs (new lists)."""
        if ids is None:
            return _Unrolled(inputs, [], [], [])
        with self._lock:
            for k in range(len(ids), 0, -1):
                seen = self._recent.get(tuple(ids[:k]))
                if seen is not None and torch.equal(seen.inputs[:, :k], inputs[:, :k]):
                    return _Unrolled(inputs, seen.hidden[:k], seen.cells[:k], seen.gates[:k])
        return _Unrolled(inputs, [], [], [])

    def _keep(self, ids: list[int] | None, done: _Unrolled) -> None:
        if ids is None:
            return
        with self._lock:
            for k in range(1, len(ids) + 1):
                key = tuple(ids[:k])
                self._recent[key] = done
                self._recent.move_to_end(key)
            while len(self._recent) > PREFIXES_KEPT:
                self._recent.popitem(last=False)
