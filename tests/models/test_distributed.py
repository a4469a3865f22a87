"""Two gloo ranks on the CPU train one tiny model together and end with identical weights."""

from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file

from bench.serving import free_port

SHIPPED_TOKENIZER = Path(__file__).resolve().parents[2] / "checkpoints" / "tokenizer.json"
TINY = '{"d_model": 32, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "d_ff": 64}'


def _worker(rank: int, world: int, port: int, root: str) -> None:
    import os

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    from models import train

    args = train.parse_args([
        "--model", "transformer", "--checkpoints", root, "--device", "cpu", "--limit", "300",
        "--config", TINY, "--bleu-pairs", "5", "--max-tokens", "600", "--minutes", "0.05",
        "--eval-minutes", "10"
    ])
    model, progress = train.run(args)
    weights = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(Path(root) / f"rank{rank}.safetensors"), {"step": str(progress.step)})


@pytest.mark.slow
def test_two_gloo_ranks_end_with_identical_weights(tmp_path):
    (tmp_path / "tokenizer.json").write_bytes(SHIPPED_TOKENIZER.read_bytes())
    mp.spawn(_worker, args=(2, free_port(), str(tmp_path)), nprocs=2, join=True)
    a = load_file(str(tmp_path / "rank0.safetensors"))
    b = load_file(str(tmp_path / "rank1.safetensors"))
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    # they trained: the weights moved away from the shared initialisation
    torch.manual_seed(0)
    from models.architectures import build
    from models.config import TransformerConfig

    fresh = build(TransformerConfig(vocab_size=8000, d_model=32, n_heads=2, n_encoder_layers=1,
                                    n_decoder_layers=1, d_ff=64)).state_dict()
    assert not torch.equal(fresh["decoder_layers.0.ff.W_1.weight"], a["decoder_layers.0.ff.W_1.weight"])
    assert (tmp_path / "transformer" / "model.safetensors").exists()  # rank 0 wrote the checkpoint
