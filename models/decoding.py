"""Turning next-token scores into a sentence: greedy search and beam search.

Both stop at end-of-sentence. Greedy search keeps every attention map and next-token
distribution as it goes; beam search, whose surviving hypotheses reshuffle at every step, makes
one teacher-forced pass over the chosen output afterwards. The decoder is causal, so both give
exactly the numbers the search saw (up to float rounding).

Both can start from a forced `prefix` of target ids (the prediction chapter's what-if): those are fed to the
decoder as if chosen, kept verbatim, and the search continues after them. Beam search also records
its `history`, the tree of hypotheses it considered step by step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from models.config import MAX_BEAM_SIZE
from models.outputs import ModelOutput, select_batch
from models.tokenizer import BOS_ID, EOS_ID, PAD_ID


@dataclass
class Hypothesis:
    tokens: list[int]  # produced ids, without BOS and EOS
    log_prob: float  # sum of the log-probabilities of the tokens (and EOS when finished)
    score: float  # log_prob after the length penalty: what the beam ranks by
    finished: bool  # ended with EOS (False: stopped by the length limit)
    node: tuple[int, int] | None = None  # (step, index) of its last node in Decoded.history


KEPT, FINISHED, DROPPED, FORCED = "kept", "finished", "dropped", "forced"


@dataclass
class BeamNode:
    """One hypothesis beam search considered at one step: its parent extended by `token`."""

    token: int  # the piece added (EOS_ID: the hypothesis ends here)
    parent: int | None  # index in the previous step's nodes (None at step 0: the empty hypothesis)
    log_prob: float  # cumulative: the parent's log-prob plus this token's
    score: float  # log_prob after the length penalty: what the beam ranks by
    # kept: in the beam, extended at the next step (or in the final beam at the length limit);
    # finished: ended with EOS, a candidate of the final beam; forced: a piece of the prefix;
    # dropped: among the 2 x beam_size best extensions but not kept (the beam was full), or kept
    # at a step after which the search stopped (enough hypotheses had finished)
    status: str


@dataclass
class Decoded:
    tokens: list[int]  # the chosen output, without BOS and EOS
    finished: bool
    output: ModelOutput  # what the decoder computed reading [BOS] + tokens: T = len(tokens) + 1 positions
    top_k: list[list[tuple[int, float]]]  # per position: (token id, probability), best first
    beam: list[Hypothesis] = field(default_factory=list)  # beam search: the final beam
    history: list[list[BeamNode]] = field(default_factory=list)  # beam search: per step, the nodes


class Stopped(Exception):
    """The search was told to stop (its caller no longer wants the answer)."""


Stop = Callable[[], bool] | None  # asked before every decoder step; True: raise Stopped


def check_stop(stop: Stop) -> None:
    """Raise Stopped when `stop` says so (asked before every decoder step)."""
    if stop is not None and stop():
        raise Stopped()


def max_target_len(model, src_len: int) -> int:
    """Translations are rarely much longer than their source; the cap also bounds the work."""
    cap = model.config.max_len - 1
    return max(1, min(cap, int(1.5 * src_len) + 10))


def _encode(model, src: torch.Tensor, options: dict):
    return model.encode(src, **options) if options else model.encode(src)


def _forward(model, src: torch.Tensor, tokens: list[int], options: dict) -> ModelOutput:
    tgt_in = torch.tensor([[BOS_ID, *tokens]], device=src.device)
    return model(src, tgt_in, **options) if options else model(src, tgt_in)


def _allowed(logits: torch.Tensor) -> torch.Tensor:
    """Scores with padding and BOS ruled out: they are never a valid next token."""
    scores = logits.float().clone()
    scores[..., PAD_ID] = float("-inf")
    scores[..., BOS_ID] = float("-inf")
    return scores


def _next_token_scores(logits: torch.Tensor) -> torch.Tensor:
    return _allowed(logits[:, -1])  # (B, V)


FIRST_ALLOWED = 2  # PAD_ID and BOS_ID are ids 0 and 1, never a valid next token
assert {PAD_ID, BOS_ID} == set(range(FIRST_ALLOWED))


def _greedy_choice(logits: torch.Tensor) -> torch.Tensor:
    """(B, t, V) -> (B, 1): what argmax over _next_token_scores picks, read off a view of the
    allowed ids (no copy of the 8000 scores per step)."""
    return logits[:, -1, FIRST_ALLOWED:].argmax(-1, keepdim=True) + FIRST_ALLOWED


def greedy_choices(logits: torch.Tensor) -> list[int]:
    """(B, 1, V) -> each sentence's `greedy_piece`, read back once as ints."""
    return (_first_largest(logits[:, -1, FIRST_ALLOWED:]) + FIRST_ALLOWED).tolist()


def greedy_piece(logits: torch.Tensor) -> int:
    """One sentence's greedy choice: its step's scores (any shape holding one row of V) -> the id
    `_greedy_choice` picks, read back as an int."""
    return int(_first_largest(logits.reshape(1, -1)[:, FIRST_ALLOWED:])[0]) + FIRST_ALLOWED


def _first_largest(scores: torch.Tensor):
    """(B, V) -> (B,) the index of each row's largest score, the first of equals, as torch.argmax
    picks it. On a CPU through numpy, whose argmax is vectorized: torch's reads about 8000 scores
    in 18 us per row on the machines here, numpy's in about 2 (bench/README.md, "Where a batched
    step's time goes")."""
    on_cpu = scores.device.type == "cpu" and not scores.requires_grad
    if on_cpu and scores.dtype in (torch.float32, torch.float16):
        return scores.numpy().argmax(-1)
    return scores.argmax(-1)


def _top_k(logits: torch.Tensor, k: int) -> list[list[tuple[int, float]]]:
    """The distributions the search chose from: (T, V) logits -> per position the k best; k 0:
    none, and no softmax."""
    if k == 0:
        return []
    probs, ids = torch.softmax(_allowed(logits), dim=-1).topk(k, dim=-1)  # (T, k)
    return [list(zip(i.tolist(), p.tolist(), strict=True)) for i, p in zip(ids, probs, strict=True)]


def greedy_batch(model, src: torch.Tensor, max_len: int | None = None, stop: Stop = None,
                 **options) -> list[list[int]]:
    """Greedy translations of a padded batch src (B, S): one list of ids per sentence."""
    B = src.size(0)
    max_len = max_len or max_target_len(model, src.size(1))
    memory = _encode(model, src, options)
    last = torch.full((B, 1), BOS_ID, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    out, cache = [], None
    for _ in range(max_len):
        check_stop(stop)
        logits, _, cache = model.decode(memory, last, cache)
        last = _greedy_choice(logits)  # (B, 1)
        last = last.masked_fill(done.unsqueeze(1), PAD_ID)
        out.append(last)
        done |= last.squeeze(1) == EOS_ID
        if done.all():
            break
    ids = torch.cat(out, dim=1).tolist()
    return [row[: row.index(EOS_ID)] if EOS_ID in row else row for row in ids]


def greedy(model, src_ids: list[int], max_len: int | None = None, top_k: int = 5, stop: Stop = None,
           prefix: Sequence[int] = (), **options) -> Decoded:
    """Greedy translation of one sentence, with its internals collected as the search runs (no
    second pass). `options` go to the model's `encode_with_internals` (e.g. `head_mask=`, or
    `positional=`, which switches the Transformer encoder's positional encoding, not the decoder's).
    A `prefix` of target ids is fed as if chosen, then greedy search continues: the output starts
    with it verbatim, and its maps and top-k cover prefix and continuation."""
    src = _source(model, src_ids)
    max_len = max_len or max_target_len(model, len(src_ids))
    prefix = check_prefix(model, prefix, max_len)
    memory, internals = model.encode_with_internals(src, **options)
    tokens, steps, cache = [], [], None
    last, finished = BOS_ID, False
    while True:
        check_stop(stop)
        logits, weights, cache = model.decode(memory, torch.tensor([[last]], device=src.device), cache)
        steps.append((logits, weights))
        if len(tokens) == max_len:  # cut by the limit, with the outputs after the last token kept
            break
        if len(tokens) < len(prefix):  # forced: fed as if chosen
            last = prefix[len(tokens)]
            tokens.append(last)
            continue
        last = greedy_piece(logits)
        if last == EOS_ID:
            finished = True
            break
        tokens.append(last)
    return collected(tokens, finished, steps, internals, top_k)


def collected(tokens: list[int], finished: bool, steps: list[tuple[torch.Tensor, dict]], internals: dict,
              top_k: int) -> Decoded:
    """A greedy search's Decoded from what it kept as it ran: per step the logits (1, 1, V) and the
    maps, and the encoder's internals."""
    output = _stack_steps(steps, internals)
    k = min(top_k, output.logits.size(-1))
    return Decoded(tokens=tokens, finished=finished, output=output, top_k=_top_k(output.logits[0], k))


def _stack_steps(steps: list[tuple[torch.Tensor, dict]], internals: dict) -> ModelOutput:
    """Per-step logits (B, 1, V) and maps (B, L, h, 1, keys) -> one ModelOutput over T steps.
    Decoder self-attention rows grow by one key per step: zeros fill the future, as the causal
    mask of a full pass would."""
    attentions = dict(internals.get("attentions", {}))
    for kind in steps[0][1]:
        rows = [weights[kind] for _, weights in steps]
        width = max(r.size(-1) for r in rows)
        attentions[kind] = torch.cat([F.pad(r, (0, width - r.size(-1))) for r in rows], dim=3)
    logits = torch.cat([step_logits for step_logits, _ in steps], dim=1)  # (B, T, V)
    return ModelOutput(logits=logits, attentions=attentions,
                       **{k: v for k, v in internals.items() if k != "attentions"})


def greedy_tokens(model, src_ids: list[int], max_len: int | None = None, stop: Stop = None,
                  **options) -> tuple[list[int], bool]:
    """Only the greedy output ids and whether it ended with EOS: no internals kept."""
    max_len = max_len or max_target_len(model, len(src_ids))
    tokens = greedy_batch(model, _source(model, src_ids), max_len, stop, **options)[0]
    return tokens, len(tokens) < max_len


def beam_search(
    model, src_ids: list[int], beam_size: int = 4, max_len: int | None = None, top_k: int = 5,
    alpha: float = 0.6, stop: Stop = None, prefix: Sequence[int] = (), **options,
) -> Decoded:
    """Keep the `beam_size` best partial translations at every step (Sutskever et al. 2014).

    Scores are summed log-probabilities divided by the GNMT length penalty ((5 + n) / 6)^alpha,
    so longer sentences are not punished merely for having more factors below 1. A `prefix` is
    fed first, one forced node per step: every hypothesis starts with it, and its log-probability
    counts. `Decoded.history` holds, per step, the 2 x beam_size best extensions considered.
    """
    if not 1 <= beam_size <= MAX_BEAM_SIZE:
        raise ValueError(f"beam_size must be between 1 and {MAX_BEAM_SIZE}")
    src = _source(model, src_ids)
    max_len = max_len or max_target_len(model, len(src_ids))
    prefix = check_prefix(model, prefix, max_len)
    memory = _encode(model, src, options)
    device = src.device
    alive: list[tuple[list[int], float]] = [([], 0.0)]
    nodes: list[int | None] = [None]  # per alive hypothesis: its node in the last step of history
    finished: list[Hypothesis] = []
    history: list[list[BeamNode]] = []
    cache = None

    def step_log_probs():
        nonlocal cache
        check_stop(stop)
        last = torch.tensor([[seq[-1] if seq else BOS_ID] for seq, _ in alive], device=device)
        logits, _, cache = model.decode(memory, last, cache)
        return torch.log_softmax(_next_token_scores(logits), dim=-1)  # (k, V)

    for token in prefix:
        seq, lp = alive[0]
        total = float(torch.tensor([lp], device=device) + step_log_probs()[0, token])
        history.append([BeamNode(token, nodes[0], total, _hypothesis([*seq, token], total, False, alpha).score,
                                 FORCED)])
        alive, nodes = [([*seq, token], total)], [0]
    for _ in range(max_len - len(prefix)):
        log_probs = step_log_probs()
        totals = torch.tensor([lp for _, lp in alive], device=device).unsqueeze(1) + log_probs
        best, flat = totals.view(-1).topk(min(2 * beam_size, totals.numel()))
        next_alive, rows, step, kept = [], [], [], []
        for total, index in zip(best.tolist(), flat.tolist(), strict=True):
            row, token = divmod(index, log_probs.size(1))
            seq = alive[row][0]
            done = token == EOS_ID
            hypothesis = _hypothesis(seq if done else [*seq, token], total, done, alpha)
            if len(next_alive) == beam_size:  # the beam is full: considered, not kept
                status = DROPPED
            elif done:
                status = FINISHED
                hypothesis.node = (len(history), len(step))
                finished.append(hypothesis)
            else:
                status = KEPT
                next_alive.append((hypothesis.tokens, total))
                rows.append(row)
                kept.append(len(step))
            step.append(BeamNode(token, nodes[row], total, hypothesis.score, status))
        history.append(step)
        if len(finished) >= beam_size or not next_alive:
            for i in kept:  # never extended: the search ends here
                step[i].status = DROPPED
            break
        index = torch.tensor(rows, device=device)
        memory, cache, alive, nodes = select_batch(memory, index), select_batch(cache, index), next_alive, kept
    else:
        last_step = len(history) - 1
        finished.extend(replace(_hypothesis(seq, lp, False, alpha), node=(last_step, node))
                        for (seq, lp), node in zip(alive, nodes, strict=True))
    finished.sort(key=lambda c: c.score, reverse=True)
    best_c = finished[0]
    decoded = _finish(model, src, best_c.tokens, best_c.finished, top_k, options)
    decoded.beam = finished[:beam_size]
    decoded.history = history
    return decoded


def check_prefix(model, prefix: Sequence[int], max_len: int) -> list[int]:
    """A forced prefix as a list of ids, each a piece the model may output (not padding, BOS or
    EOS), at most `max_len` long; else ValueError."""
    prefix = [int(t) for t in prefix]
    vocab = model.config.vocab_size
    bad = [t for t in prefix if not FIRST_ALLOWED <= t < vocab or t == EOS_ID]
    if bad:
        raise ValueError(f"prefix ids {bad} are not pieces the model can output")
    if len(prefix) > max_len:
        raise ValueError(f"prefix of {len(prefix)} pieces is longer than the output limit {max_len}")
    return prefix


def chosen_probabilities(decoded: Decoded) -> list[float]:
    """The probability the model gave each chosen piece at its step (the tokens, then EOS when the
    output finished), over the same allowed pieces as the top-k: a forced piece's own chance."""
    chosen = [*decoded.tokens, EOS_ID] if decoded.finished else decoded.tokens
    logits = decoded.output.logits[0, : len(chosen)]
    probs = torch.softmax(_allowed(logits), dim=-1)
    index = torch.tensor(chosen, device=probs.device, dtype=torch.long)
    return probs[torch.arange(len(chosen), device=probs.device), index].tolist()


def sequence_log_prob(model, src_ids: list[int], tokens: list[int], finished: bool = True, **options) -> float:
    """log P(tokens [+ EOS when finished] | source) under `model` (with `options`), teacher-forced:
    the sum beam search ranks by, over the same allowed pieces."""
    src = _source(model, src_ids)
    logits = _forward(model, src, tokens, options).logits[0]  # (T + 1, V)
    log_probs = torch.log_softmax(_allowed(logits), dim=-1)
    chosen = [*tokens, EOS_ID] if finished else tokens
    index = torch.tensor(chosen, device=src.device)
    return float(log_probs[torch.arange(len(chosen), device=src.device), index].double().sum())


def _hypothesis(seq: list[int], log_prob: float, done: bool, alpha: float) -> Hypothesis:
    penalty = ((5 + len(seq) + int(done)) / 6) ** alpha
    return Hypothesis(tokens=seq, log_prob=log_prob, score=log_prob / penalty, finished=done)


def _source(model, src_ids: list[int]) -> torch.Tensor:
    if not src_ids:
        raise ValueError("cannot translate an empty source")
    device = next(model.parameters()).device
    return torch.tensor([src_ids], device=device)


def _finish(model, src, tokens, finished, top_k, options) -> Decoded:
    output = _forward(model, src, tokens, options)
    k = min(top_k, output.logits.size(-1))
    return Decoded(tokens=tokens, finished=finished, output=output, top_k=_top_k(output.logits[0], k))
