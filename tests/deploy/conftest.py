"""Fixtures: the parsed Dockerfile, Kubernetes objects and compose file."""

from __future__ import annotations

import pytest
import yaml

from tests.deploy.files import DEPLOY, K8S, ROOT, Instruction, load_yaml_documents, parse_dockerfile


@pytest.fixture(scope="session")
def dockerfile() -> list[Instruction]:
    return parse_dockerfile(ROOT / "Dockerfile")


@pytest.fixture(scope="session")
def k8s() -> dict[str, dict]:
    """Every Kubernetes object under deploy/k8s by kind (one of each)."""
    objects: dict[str, dict] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load_yaml_documents(path):
            if doc.get("kind") == "Kustomization":
                continue
            assert doc["kind"] not in objects, f"two {doc['kind']} objects"
            objects[doc["kind"]] = doc
    return objects


@pytest.fixture(scope="session")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())
