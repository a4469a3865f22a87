import pytest
import torch

from models.device import choose_device


@pytest.mark.parametrize(("setting", "gpu", "expected"), [
    ("auto", False, "cpu"), ("auto", True, "cuda"), ("cpu", True, "cpu"), ("cuda", True, "cuda")])
def test_device_choice_honours_the_setting(monkeypatch, setting, gpu, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert choose_device(setting).type == expected


def test_cuda_without_a_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="cuda"):
        choose_device("cuda")


def test_an_unknown_device_is_refused():
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        choose_device("tpu")
