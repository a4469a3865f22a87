"""The Dockerfile and .dockerignore: base, torch variant, user, command, health check, context."""

from __future__ import annotations

import ast
import re
import tomllib

from tests.deploy.files import (
    ROOT,
    cli_option,
    dockerignore_excludes,
    exec_form,
    read_dockerignore,
    split_shell,
)


def _args(dockerfile, keyword):
    return [i for i in dockerfile if i.keyword == keyword]


def _arg_default(dockerfile, name):
    for inst in _args(dockerfile, "ARG"):
        key, _, default = inst.args.partition("=")
        if key == name:
            return default
    raise AssertionError(f"no ARG {name}")


def test_multi_stage_on_an_overridable_slim_python_311_base(dockerfile):
    froms = _args(dockerfile, "FROM")
    assert len(froms) >= 2, "multi-stage: a builder and a runtime stage"
    assert _arg_default(dockerfile, "BASE_IMAGE") == "python:3.11-slim"
    assert any(i.keyword == "ARG" and i.args.startswith("BASE_IMAGE=") and i.stage == -1 for i in dockerfile)
    for inst in froms:
        assert split_shell(inst.args)[0] == "${BASE_IMAGE}", inst.args
    builder = split_shell(froms[0].args)[-1]
    assert any(i.keyword == "COPY" and f"--from={builder}" in i.args for i in dockerfile)


def test_torch_is_the_pinned_version_in_a_selectable_variant_cpu_by_default(dockerfile):
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [d for d in pyproject["project"]["dependencies"] if re.match(r"torch\s*==", d)]
    assert len(pins) == 1
    assert _arg_default(dockerfile, "TORCH_VERSION") == pins[0].split("==")[1].strip()
    assert _arg_default(dockerfile, "TORCH_VARIANT") == "cpu"
    assert _arg_default(dockerfile, "TORCH_INDEX_URL") == "https://download.pytorch.org/whl/${TORCH_VARIANT}"
    runs = " ".join(i.args for i in _args(dockerfile, "RUN"))
    assert "torch==${TORCH_VERSION}+${TORCH_VARIANT}" in runs
    assert "--index-url" in runs


def test_the_final_stage_runs_as_a_non_root_user(dockerfile):
    last = max(i.stage for i in dockerfile)
    users = [i.args for i in dockerfile if i.keyword == "USER" and i.stage == last]
    assert users, "USER in the runtime stage"
    assert users[-1].split(":")[0] not in ("root", "0")


def test_cmd_starts_uvicorn_on_all_interfaces_on_the_exposed_port(dockerfile):
    (expose,) = _args(dockerfile, "EXPOSE")
    assert expose.args.split("/")[0] == "8000"
    cmd = exec_form(_args(dockerfile, "CMD")[-1].args)
    assert cmd[:3] == ["python", "-m", "uvicorn"]
    assert cli_option(cmd, "--host") == "0.0.0.0"
    assert cli_option(cmd, "--port") == expose.args.split("/")[0]
    assert not _args(dockerfile, "ENTRYPOINT")


def test_the_uvicorn_target_exists_and_is_the_one_make_serve_starts(dockerfile):
    cmd = exec_form(_args(dockerfile, "CMD")[-1].args)
    target = next(a for a in cmd[3:] if ":" in a and not a.startswith("-"))
    module, attr = target.split(":")
    source = ROOT / (module.replace(".", "/") + ".py")
    assert source.is_file(), f"{source} missing"
    tree = ast.parse(source.read_text())
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name)}
    names |= {node.target.id for node in tree.body
              if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    assert attr in names, f"{module} defines no module-level {attr}"
    assert f"uvicorn {target}" in (ROOT / "Makefile").read_text()
    # the runtime stage copies the package the target lives in, into the WORKDIR
    (workdir,) = [i.args for i in dockerfile if i.keyword == "WORKDIR"]
    assert workdir == "/app"
    copied = [split_shell(i.args)[0] for i in _args(dockerfile, "COPY") if "--from" not in i.args]
    assert module.split(".")[0] in copied


def test_healthcheck_asks_the_health_endpoint_with_python_not_curl(dockerfile):
    (health,) = _args(dockerfile, "HEALTHCHECK")
    options, _, command = health.args.partition("CMD ")
    assert "--start-period" in options, "checkpoints load before the server answers"
    test = exec_form(command)
    assert test[0] == "python" and "curl" not in command and "wget" not in command
    url = re.search(r"https?://[^'\"]+", command).group(0)
    assert url == "http://127.0.0.1:8000/api/health"


def test_checkpoints_and_the_code_the_server_needs_are_copied(dockerfile):
    copied = {split_shell(i.args)[0] for i in _args(dockerfile, "COPY") if "--from" not in i.args}
    assert {"app", "models", "templates", "static", "checkpoints"} <= copied
    for path in copied:
        assert (ROOT / path).exists(), path


def test_dockerignore_keeps_environments_caches_git_and_training_state_out(dockerfile):
    patterns = read_dockerignore()
    for path in [".venv/bin/python", ".git/HEAD", "app/__pycache__/main.cpython-311.pyc",
                 "models/__pycache__/x.pyc", ".pytest_cache/v/cache", ".ruff_cache/x",
                 "attention_lab.egg-info/PKG-INFO", "checkpoints/transformer/train_state.safetensors",
                 "checkpoints/transformer/train_state.json", "checkpoints/transformer/train.log",
                 "runs/x/events", "tests/deploy/test_dockerfile.py", "bench/x.py"]:
        assert dockerignore_excludes(patterns, path), f"{path} would enter the build context"
    copied = [split_shell(i.args)[0] for i in _args(dockerfile, "COPY") if "--from" not in i.args]
    for path in copied + ["app/main.py", "models/registry.py", "checkpoints/tokenizer.json",
                          "checkpoints/transformer/model.safetensors", "checkpoints/transformer/config.json",
                          "checkpoints/transformer/metrics.json"]:
        assert not dockerignore_excludes(patterns, path), f"{path} is kept out of the build context"


def test_the_image_and_make_serve_run_uvicorn_with_the_same_open_network_limits(dockerfile):
    cmd = exec_form(_args(dockerfile, "CMD")[-1].args)
    assert cli_option(cmd, "--http") == "app.serving:H11"  # heads within ATTENTION_LAB_HEADER_TIMEOUT
    assert (ROOT / "app" / "serving.py").is_file()
    assert 1 <= int(cli_option(cmd, "--timeout-keep-alive")) <= 30
    assert int(cli_option(cmd, "--limit-concurrency")) >= 16
    makefile = (ROOT / "Makefile").read_text()
    limits = re.search(r"^UVICORN_LIMITS\s*:=\s*(.+)$", makefile, re.M).group(1).split()
    for option in ("--http", "--timeout-keep-alive", "--limit-concurrency", "--backlog"):
        assert cli_option(limits, option) == cli_option(cmd, option), option
    assert "$(UVICORN_LIMITS)" in makefile
