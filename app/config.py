"""Server settings, read once from the environment (prefix ATTENTION_LAB_).

    ATTENTION_LAB_DEVICE=cpu ATTENTION_LAB_MODELS=transformer,lstm make serve
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from limits import parse
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.limits import Budget, Limits
from models.serving.options import LAYOUT, LAYOUTS, PRECISION, PRECISIONS, STEP, STEPS

REPO_ROOT = Path(__file__).resolve().parent.parent
FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATTENTION_LAB_", extra="ignore")

    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto: cuda when available, else cpu
    # Relative paths are taken from the repository root, so the server starts from any folder.
    checkpoints: Path = REPO_ROOT / "checkpoints"
    # Checkpoint folders to load; None: the story's five, then any other folder holding a model.
    # NoDecode: the environment gives "rnn,lstm", not a JSON list.
    models: Annotated[tuple[str, ...] | None, NoDecode] = None
    max_chars: int = Field(Limits.max_chars, ge=1)  # longest input text, after trimming white space
    # Longest translation decoded: bounds the work (and the maps) when a model babbles on an odd
    # input instead of ending the sentence. Seq2seq models stop at 127 anyway (their max_len).
    max_target_tokens: int = Field(Limits.max_target_tokens, ge=1)
    max_gradient_length: int = Field(Limits.max_gradient_length, ge=1)  # longest repeated gradient input
    cache_size: int = Field(256, ge=0)  # recent results kept; 0 switches the cache off
    cache_mb: int = Field(64, ge=1)  # and the memory they may hold, estimated (see app/runtime/cache.py)
    # Intra-op threads of the one thread that runs the models (app/runtime/model_thread.py). None: all
    # cores while the machine is otherwise quiet, one while other programs wait for the CPU
    # (app/runtime/cores.py); a number fixes it.
    torch_threads: int | None = Field(None, ge=1)
    # Models run side by side, one per core with one intra-op thread each, by POST /api/compare
    # (app/runtime/model_thread.py, run_together). None: as many as torch has threads; 1: one after another.
    lanes: int | None = Field(None, ge=1)
    # How far the threads that run the models step back for the server's own thread (the event loop
    # that takes requests, notices clients that hang up and hands answers over) and for other programs
    # (the reader's browser): a Linux nice value added to theirs (app/runtime/model_thread.py); 0: none,
    # the default, because a browser busy drawing then starved the models (docs/SERVER.md).
    model_nice: int = Field(0, ge=0, le=19)
    # Step readers' compares together: every reader's POST /api/compare sentence of one model joins
    # that model's pool, and the model thread takes one decoding step for all of them at a time
    # (continuous batching: app/runtime/model_thread.py, models/serving/batch.py). A reader alone is the
    # one-sentence search bit for bit; in a pool of several, weights and probabilities agree with it
    # within 1e-3 of their value (docs/SERVER.md, "Fidelity"). False: each compare's models run by
    # themselves, side by side.
    batch_compares: bool = True
    # Sentences one model decodes together at most; more wait, oldest first, and a text superseded
    # while it waits costs nothing (app/runtime/model_thread.py). Larger pools step more sentences per
    # read of the weights but each step takes longer: every live sentence's next piece waits for it.
    pool_rows: int = Field(16, ge=1)
    # Processes that step readers' compares together (app/runtime/stepper_client.py): each loads the models
    # and steps its share of them on a lane of its own, out of reach of the event loop's interpreter
    # lock (docs/SERVER.md, "Stepping processes"). None: one per lane (core); 0: the model thread steps
    # them, as it does while a process starts. Only on a CPU, and only with batch_compares.
    step_processes: int | None = Field(None, ge=0)
    # The Linux nice value the stepper processes add to the server's. Unlike model_nice, not 0 by
    # default: the processes have both cores to themselves, and at nice 0 they starved the event loop
    # that hands their answers over, so every answer waited (docs/SERVER.md, "Stepping processes").
    stepper_nice: int = Field(5, ge=0, le=19)
    # How the models are served (models/serving; the allowed values and defaults are declared in
    # models/serving/options.py). layout: how the served weights lie in memory (input-major makes a
    # CPU's one-row decoding steps faster with the same fp32 values; as-stored keeps the checkpoint's
    # order). precision: whether the weights the checkpoints store in fp16 also stay in memory as
    # fp16 for their products, which are still computed in fp32 (a CPU's decoding steps read half the
    # bytes; fp32 multiplies the fp32 copies only). step: how a Transformer runs its decoding steps on
    # a CPU (graph records the step once at start-up and replays its calls from C++, the same numbers
    # bit for bit; python runs the one-position step from Python).
    layout: Literal[LAYOUTS] = LAYOUT
    precision: Literal[PRECISIONS] = PRECISION
    step: Literal[STEPS] = STEP
    # Longest request body, in bytes: a longer one is 413 before it is parsed (app/guard.py). The
    # biggest legitimate body (500 characters, a 1,000-piece prefix or permutation) is well under it.
    max_body_bytes: int = Field(64 * 1024, ge=1024)
    # Seconds the oldest queued model work may have waited before a new model request (every POST
    # under /api/) is refused at once, 503 with Retry-After (app/admission.py): the wait it would meet.
    max_wait: float = Field(0.5, gt=0)
    # Model requests in the server at once per replica, running or waiting, whatever their wait; one
    # more is 503 with Retry-After at once (app/admission.py). A typing reader has about one in flight.
    queue_limit: int = Field(256, ge=1)
    # Serve /docs (Swagger UI) and /redoc (ReDoc), offline: their files come from the installed
    # fastapi-offline package, mounted at /docs-assets (app/routes/docs.py). False: all three 404.
    # /openapi.json is always served.
    docs: bool = True
    # "Train it yourself" (POST /api/train, app/services/live.py): runs at once per replica, each in a
    # process of its own; one more is 429 with Retry-After.
    train_slots: int = Field(1, ge=1)
    # A run's resident memory cap in MB: past it the process is killed and the reader told why.
    train_memory_mb: int = Field(768, ge=128)
    # A run's reader must keep reading: a write of its lines that waits this long (the client read
    # nothing while the socket's buffers were full) drops the answer and frees the slot. 20 s: past
    # TCP's retransmission backoff over a short outage (about 13 s for six retries) and a busy
    # browser's pauses, yet short against a run's own cap (150 s at the defaults), so a reader that
    # reads no more holds the slot, and the line behind it, a little longer at most.
    train_write_deadline_s: float = Field(20.0, gt=0)
    # "Teach it a pair" (POST /api/teach, app/services/teach.py): runs at once per replica, each in a
    # process of its own (its slots, not the training's: a run takes seconds, a training run minutes);
    # more wait in a line. Its memory cap in MB, as train_memory_mb; the write deadline is the training's.
    teach_slots: int = Field(1, ge=1)
    teach_memory_mb: int = Field(768, ge=128)
    # A run's torch threads. Two: a 30-step run on lstm-additive took 2.2 s of its own work against
    # 3.4 s on one, and its process is niced (10), so the readers' translations still come first
    # (bench/README.md, "teach.py").
    teach_threads: int = Field(2, ge=1)
    # Start a run's process ahead, when a reader opens the experiment (importing torch takes seconds);
    # it ends by itself when no run came within five minutes. False: each run starts its own.
    teach_spare: bool = True
    # Each client's share of the expensive experiments (app/runtime/shares.py): a bucket of N units
    # that empties at N per period, in the `limits` package's notation ("N/period"); docs/SERVER.md
    # says why these budgets. A client is its address, an IPv6 client its /64 (app/clients.py).
    # False: no shares (one reader's tests from one address).
    shares: bool = True
    share_train: str = "3/10 minutes"  # POST /api/train: runs started (up to ~2 minutes of one core each)
    share_teach: str = "20/10 minutes"  # POST /api/teach: runs started (3-10 s of one core each)
    share_timing: str = "3/10 minutes"  # POST /api/timing: measurements run (4-20 s of the model thread)
    # POST /api/gradients and /api/long-lag/gradients: seconds of the model thread their work took
    share_model_time: str = "300/10 minutes"
    # Redis that keeps the shares' counters when several replicas serve (redis://host:6379/0);
    # None: each replica counts in its own memory.
    redis_url: str | None = None
    # The app's log: one line per request at info (app/request_log.py); warning keeps only faults.
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # Seconds a client has to send a request's head (line and headers), from connecting or from the
    # previous answer: slow senders cannot hold connections open (app/serving.py, uvicorn's --http).
    header_timeout: float = Field(10.0, gt=0)
    # Seconds a client has, once its head is in, to send the whole body; later: 408 and the connection
    # closed (app/guard.py). 64 KiB in 10 s is 6.5 KB/s, far slower than any real client.
    body_timeout: float = Field(10.0, gt=0)

    @field_validator("models", mode="before")
    @classmethod
    def _split_names(cls, value):
        if value is None:
            return None
        if isinstance(value, str):
            value = [name.strip() for name in value.split(",") if name.strip()]
        bad = [name for name in value if not FOLDER_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"model names are checkpoint folder names (letters, digits, - and _): {bad}")
        return tuple(value)

    @property
    def limits(self) -> Limits:
        return Limits(self.max_chars, self.max_target_tokens, self.max_gradient_length)

    @property
    def share_budgets(self) -> dict[str, Budget]:
        """The shares by name, empty when they are off."""
        if not self.shares:
            return {}
        return {"train": Budget.parse("train", self.share_train, "runs"),
                "teach": Budget.parse("teach", self.share_teach, "runs"),
                "timing": Budget.parse("timing", self.share_timing, "measurements"),
                "model_time": Budget.parse("model_time", self.share_model_time, "seconds of model time",
                                           need=0.0)}

    @field_validator("share_train", "share_teach", "share_timing", "share_model_time")
    @classmethod
    def _a_budget(cls, value: str) -> str:
        try:
            parse(value)
        except ValueError as error:
            raise ValueError(f"a budget is 'N/period' (e.g. '3/10 minutes'), got {value!r}") from error
        return value

    @field_validator("checkpoints")
    @classmethod
    def _from_repo_root(cls, value: Path) -> Path:
        return value if value.is_absolute() else REPO_ROOT / value


@lru_cache
def get_settings() -> Settings:
    return Settings()
