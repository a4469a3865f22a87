# Attention Lab: the FastAPI server and the five trained checkpoints in one image.
#
#   CPU (default):  docker build -t attention-lab .
#   CUDA:           docker build -t attention-lab:cuda --build-arg TORCH_VARIANT=cu128 .
#                   docker run --gpus all -p 8000:8000 attention-lab:cuda
#
# The CUDA wheels of torch bundle the CUDA runtime, so the slim base works with `--gpus all`
# (the driver comes from the host); BASE_IMAGE can point at any image that has Python 3.11 with
# venv (e.g. an nvidia/cuda image with python3.11 installed, or a local Debian bookworm base).
# More in deploy/README.md.

ARG BASE_IMAGE=python:3.11-slim

# --- builder: a virtual environment with torch and the project's dependencies -------------------
FROM ${BASE_IMAGE} AS builder

ARG TORCH_VERSION=2.13.0
# cpu, or a CUDA tag that download.pytorch.org publishes for TORCH_VERSION (cu126, cu128, ...)
ARG TORCH_VARIANT=cpu
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/${TORCH_VARIANT}
# Build-time only, read by pip, empty by default (they never reach the final image): a folder of
# local wheels (mount it with `-v`) and a CA bundle for builds behind a TLS-intercepting proxy.
ARG PIP_FIND_LINKS=
ARG PIP_CERT=

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# torch first and on its own, pinned with its variant (2.13.0+cpu / 2.13.0+cu128), so that nothing
# later pulls another build of it.
RUN pip install "torch==${TORCH_VERSION}+${TORCH_VARIANT}" --index-url "${TORCH_INDEX_URL}"

# The project's runtime dependencies, read from pyproject.toml (only that file, so this layer is
# rebuilt when the dependencies change, not when the code does). The code itself runs from /app.
COPY pyproject.toml /src/pyproject.toml
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /src/requirements.txt \
 && pip install -r /src/requirements.txt \
 && python -c "import fastapi, safetensors, tokenizers, torch, uvicorn; print('torch', torch.__version__)"

# The application tree, staged here so that the runtime stage gets it in one layer with sane modes:
# checkpoint files are written with mode 0600 by the training run (atomic temp-file saves), and the
# non-root user must be able to read them. Byte-compiled now, since the runtime file system may be
# read-only.
COPY pyproject.toml /app/pyproject.toml
COPY models /app/models
COPY app /app/app
COPY templates /app/templates
COPY static /app/static
# tokenizer.json + one folder per model; .dockerignore keeps training state and logs out.
COPY checkpoints /app/checkpoints
RUN chmod -R u=rwX,go=rX /app \
 && python -m compileall -q /app/app /app/models

# --- runtime: the venv and the application tree; no build tools, no pip cache ------------------
FROM ${BASE_IMAGE} AS runtime

# MALLOC_ARENA_MAX=2: glibc gives each thread that allocates (up to 8 per core) its own malloc arena,
# which keeps freed memory resident; the server's 40 pool threads and model thread share two
# (docs/SERVER.md, "Load and memory").
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2 \
    ATTENTION_LAB_CHECKPOINTS=/app/checkpoints

# A fixed non-root user (uid/gid 10001) that owns nothing in /app: the server only reads.
RUN groupadd --gid 10001 app \
 && useradd --uid 10001 --gid 10001 --create-home --home-dir /home/app --shell /usr/sbin/nologin app

COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /app /app
WORKDIR /app

USER 10001:10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4).status != 200)"]

# Server settings come from the environment: ATTENTION_LAB_* for the app (ATTENTION_LAB_DEVICE,
# ATTENTION_LAB_CHECKPOINTS, ATTENTION_LAB_HEADER_TIMEOUT, ...) and UVICORN_* for uvicorn's own options
# (UVICORN_WORKERS, UVICORN_LOG_LEVEL, ...). Host and port are fixed so the image, probes and manifests
# agree. The limits for an open network are those of `make serve`: request heads within
# ATTENTION_LAB_HEADER_TIMEOUT seconds (app/serving.py), idle keep-alive connections closed after 5 s,
# at most 1024 connections and tasks (more: 503, docs/SERVER.md), 256 waiting to be accepted.
CMD ["python", "-m", "uvicorn", "app.main:app", "--host", "0.0.0.0", "--port", "8000", \
     "--http", "app.serving:H11", "--timeout-keep-alive", "5", "--limit-concurrency", "1024", "--backlog", "256", \
     "--no-access-log"]
