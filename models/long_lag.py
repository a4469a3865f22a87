"""The gradients chapter's claim is about learning: "train an RNN on long sequences and it just won't learn".
A task that needs memory across a lag, and the same recurrent encoders as the translation models
(models/rnn.py, models/lstm.py), small, trained on it for every lag.

The task: a sequence starts with one of SYMBOLS signal tokens, then `lag` filler tokens, then a
query token; the model reads it with its encoder and must name the signal from its final hidden
state. Nothing after the first token carries information about the answer, so the gradient that
teaches it has to travel back across all `lag` steps. Chance is 1 / SYMBOLS. Two fillers:
"blank" (one token, repeated) and "noise" (random tokens of their own: to carry the signal across
them a cell must learn to ignore its input, which is what the LSTM's gates are for).

    python -m models.long_lag [--fillers blank noise] [--fresh]

Each (filler, cell, lag) is trained for at most STEPS steps (stopping early once it is solved),
seeded, and saved to checkpoints/long-lag/FILLER-CELL-lagN/ (fp16 safetensors + JSON);
results.json beside them holds accuracy per lag and the loss curves. A run already saved is
skipped, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from models import checkpoint
from models.lstm import LSTMEncoder
from models.rnn import RNNEncoder

log = logging.getLogger("models.long_lag")
SYMBOLS = 4  # signal tokens 0..3: chance is 1/4
BLANK = SYMBOLS  # the "blank" filler
QUERY = SYMBOLS + 1  # the last token: "now name the signal"
NOISE = 8  # the "noise" filler draws from tokens QUERY+1 .. QUERY+NOISE
VOCAB = {"blank": QUERY + 1, "noise": QUERY + 1 + NOISE}
LAGS = {"blank": (5, 10, 20, 30, 50, 75, 100), "noise": (5, 10, 15, 20, 30, 50)}
CELLS = ("rnn", "lstm")
STEPS = 2000  # most optimizer steps per (cell, lag)
BATCH = 64
EVAL_SEQUENCES = 1000  # held-out sequences scored at the end (their own seed)
SOLVED = 0.99  # training stops early once a held-out check reaches this accuracy
FOLDER = Path("checkpoints") / "long-lag"
RESULTS = "results.json"


@dataclass
class LagConfig:
    cell: str = "lstm"  # "rnn" or "lstm"
    filler: str = "blank"  # "blank" or "noise": what stands between the signal and the query
    vocab_size: int = VOCAB["blank"]
    d_embed: int = 16
    d_hidden: int = 64
    lag: int = 10  # filler tokens between the signal and the query


class LagRecaller(nn.Module):
    """embed -> the translation models' recurrent encoder -> a linear readout of h_T."""

    def __init__(self, config: LagConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_embed)
        Encoder = LSTMEncoder if config.cell == "lstm" else RNNEncoder
        self.encoder = Encoder(config.d_embed, config.d_hidden)
        self.readout = nn.Linear(config.d_hidden, SYMBOLS)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # ids (B, T) -> logits over the signal symbols (B, SYMBOLS)
        final = self.encoder(self.embed(ids)).final
        h = final[0] if isinstance(final, tuple) else final  # the LSTM's final state is (h, c)
        return self.readout(h)


def sequences(
    n: int, lag: int, generator: torch.Generator, filler: str = "blank",
) -> tuple[torch.Tensor, torch.Tensor]:
    """n task sequences (n, lag + 2) and their answers (n,)."""
    signal = torch.randint(0, SYMBOLS, (n, 1), generator=generator)
    if filler == "blank":
        fill = torch.full((n, lag), BLANK)
    else:
        fill = torch.randint(QUERY + 1, QUERY + 1 + NOISE, (n, lag), generator=generator)
    query = torch.full((n, 1), QUERY)
    return torch.cat([signal, fill, query], dim=1), signal.squeeze(1)


def example(lag: int, filler: str = "blank", seed: int = 0) -> list[int]:
    """One fixed sequence at this lag: what the page's gradient curve reads."""
    return sequences(1, lag, torch.Generator().manual_seed(seed), filler)[0][0].tolist()


def initialized(config: LagConfig, seed: int) -> LagRecaller:
    """The model as training starts it: the same seed gives the same weights, bit for bit."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return LagRecaller(config)


@torch.no_grad()
def accuracy(model: LagRecaller, n: int = EVAL_SEQUENCES, seed: int = 1) -> float:
    """Share of n held-out sequences (seed 1: never seen in training, which uses seed 0's stream)."""
    was = model.training
    model.eval()
    c = model.config
    ids, answers = sequences(n, c.lag, torch.Generator().manual_seed(10_000 + seed), c.filler)
    right = (model(ids).argmax(-1) == answers).float().mean().item()
    model.train(was)
    return right


def train_one(config: LagConfig, steps: int = STEPS, seed: int = 0) -> tuple[LagRecaller, dict]:
    """Adam with clipping, as the translation models; stops early once solved. Returns the model
    and its record: loss curve (every 25 steps), steps and seconds taken."""
    model = initialized(config, seed).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    data = torch.Generator().manual_seed(seed)
    curve, start, step = [], time.perf_counter(), 0
    for step in range(1, steps + 1):
        ids, answers = sequences(BATCH, config.lag, data, config.filler)
        loss = F.cross_entropy(model(ids), answers)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 25 == 0:
            curve.append({"step": step, "loss": round(loss.item(), 4)})
        if step % 100 == 0 and accuracy(model, 200, seed=2) >= SOLVED:
            break
    return model, {"steps": step, "seconds": round(time.perf_counter() - start, 1), "curve": curve}


def save(model: LagRecaller, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(folder / checkpoint.WEIGHTS))
    checkpoint.write_json(folder / checkpoint.CONFIG, {"model": asdict(model.config)})


def load(folder: Path) -> LagRecaller:
    config = LagConfig(**checkpoint.read_json(folder / checkpoint.CONFIG)["model"])
    model = LagRecaller(config)
    model.load_state_dict({k: v.float() for k, v in load_file(str(folder / checkpoint.WEIGHTS)).items()})
    return model.eval()


def run_name(filler: str, cell: str, lag: int) -> str:
    return f"{filler}-{cell}-lag{lag}"


def chance_lag(results: dict, filler: str, cell: str) -> int | None:
    """The shortest lag at which `cell` is no better than guessing with this filler: accuracy
    within three standard errors of chance on the held-out sequences (None: above chance at every
    lag tried)."""
    chance = 1 / SYMBOLS
    margin = 3 * (chance * (1 - chance) / results["eval_sequences"]) ** 0.5
    runs = [r for r in results["runs"] if (r["filler"], r["cell"]) == (filler, cell)]
    for run in sorted(runs, key=lambda r: r["lag"]):
        if run["accuracy"] <= chance + margin:
            return run["lag"]
    return None


def train_all(folder: Path, fillers=tuple(LAGS), cells=CELLS, steps: int = STEPS, fresh: bool = False,
              lags: dict | None = None) -> dict:
    """Train every (filler, cell, lag) not saved yet; write results.json after each, so a kill
    loses one run at most."""
    path = folder / RESULTS
    results = None if fresh else checkpoint.read_json(path)
    results = results or {"chance": 1 / SYMBOLS, "eval_sequences": EVAL_SEQUENCES, "max_steps": steps,
                          "hardware": f"{torch.get_num_threads()} torch thread, CPU", "runs": []}
    for filler in fillers:
        for cell in cells:
            for lag in (lags or LAGS)[filler]:
                if not (folder / run_name(filler, cell, lag) / checkpoint.WEIGHTS).exists():
                    train_and_record(folder, results, LagConfig(cell, filler, VOCAB[filler], lag=lag), steps)
    return results


def train_and_record(folder: Path, results: dict, config: LagConfig, steps: int) -> None:
    model, record = train_one(config, steps)
    where = folder / run_name(config.filler, config.cell, config.lag)
    save(model, where)
    accuracy_shipped = round(accuracy(load(where)), 4)  # the fp16 weights that ship
    key = (config.filler, config.cell, config.lag)
    run = {"filler": config.filler, "cell": config.cell, "lag": config.lag, "accuracy": accuracy_shipped,
           **record}
    results["runs"] = [r for r in results["runs"] if (r["filler"], r["cell"], r["lag"]) != key] + [run]
    fillers = sorted({r["filler"] for r in results["runs"]})
    results["chance_lag"] = {f: {c: chance_lag(results, f, c) for c in CELLS} for f in fillers}
    checkpoint.write_json(folder / RESULTS, results)
    log.info("%s %s lag %3d: accuracy %.3f after %d steps (%.0f s)", *key, run["accuracy"],
             record["steps"], record["seconds"])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fillers", nargs="+", default=list(LAGS), choices=list(LAGS))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--fresh", action="store_true", help="train every run again")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)  # tiny matrices: more threads only add overhead
    return train_all(args.folder, tuple(args.fillers), steps=args.steps, fresh=args.fresh)


if __name__ == "__main__":
    main()
