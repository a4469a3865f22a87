"""Kubernetes manifests and the compose file agree with the Dockerfile and with the server."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from types import SimpleNamespace

from tests.deploy.files import (
    DEPLOY,
    K8S,
    ROOT,
    cli_option,
    exec_form,
    load_yaml_documents,
    parse_dockerfile,
    settings_fields,
)

# Peak resident memory (VmHWM) of one server process with all five models loaded, after the
# heaviest requests (beam 8, every attention map, gradients of length 200), measured by
# scripts/check-container.sh on the image's command; deploy/README.md gives it (test_memory_in_docs.py).
MEASURED_RSS_MIB = 846
# Peak resident memory (VmHWM) of one stepper process (app/runtime/stepper_client.py: the five models and
# torch) after 32 readers typing at the bottleneck chapter, and how many a pod runs (one per core of its
# CPU limit);
# deploy/README.md gives it.
MEASURED_STEPPER_MIB = 597
STEPPERS_PER_POD = 2
# What one cached maximum-size Transformer /api/attention result adds to the resident memory.
MIB_PER_CACHED_RESULT = 21
HEALTH_PATH = "/api/health"


def _image():
    dockerfile = parse_dockerfile(ROOT / "Dockerfile")
    cmd = exec_form([i for i in dockerfile if i.keyword == "CMD"][-1].args)
    (expose,) = [i.args for i in dockerfile if i.keyword == "EXPOSE"]
    user = [i.args for i in dockerfile if i.keyword == "USER"][-1]
    return int(cli_option(cmd, "--port")), int(expose.split("/")[0]), int(user.split(":")[0])


def _container(k8s):
    (container,) = k8s["Deployment"]["spec"]["template"]["spec"]["containers"]
    return container


def _resolve(port, container):
    """A Service targetPort or probe port: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    (match,) = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    return match


def _mebibytes(quantity: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]*)", str(quantity)).groups()
    scale = {"": 2**-20, "Ki": 2**-10, "Mi": 1, "Gi": 2**10, "K": 1e3 / 2**20, "M": 1e6 / 2**20,
             "G": 1e9 / 2**20}[unit]
    return float(number) * scale


def app_services(compose: dict) -> dict[str, dict]:
    """The compose services that run the server (built from the Dockerfile), not Redis beside them."""
    return {name: s for name, s in compose["services"].items() if "build" in s}


def test_one_port_everywhere(k8s, compose):
    cmd_port, expose_port, _ = _image()
    assert cmd_port == expose_port == 8000
    container = _container(k8s)
    assert [p["containerPort"] for p in container["ports"]] == [cmd_port]
    service_ports = k8s["Service"]["spec"]["ports"]
    assert service_ports and all(_resolve(p["targetPort"], container) == cmd_port for p in service_ports)
    for name, service in app_services(compose).items():
        published = [str(p).rsplit(":", 1)[-1].split("/")[0] for p in service["ports"]]
        assert published == [str(cmd_port)], f"compose service {name}: {service['ports']}"


def test_every_probe_asks_the_health_endpoint_on_that_port(k8s):
    container = _container(k8s)
    assert {"readinessProbe", "livenessProbe"} <= set(container)
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        if kind in container:
            probe = container[kind]["httpGet"]
            assert probe["path"] == HEALTH_PATH, kind
            assert _resolve(probe["port"], container) == _image()[0], kind


def test_deployment_runs_the_image_command_as_the_image_user(k8s):
    container = _container(k8s)
    assert "command" not in container and "args" not in container, "the image's CMD is the one checked"
    pod = k8s["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == _image()[2]
    # read-only root file system: the server writes nowhere but /tmp
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert "/tmp" in [m["mountPath"] for m in container["volumeMounts"]]


def test_selectors_and_the_autoscaler_target_match(k8s):
    deployment, service, hpa = k8s["Deployment"], k8s["Service"], k8s["HorizontalPodAutoscaler"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    metrics = hpa["spec"]["metrics"]
    assert any(m["type"] == "Resource" and m["resource"]["name"] == "cpu" for m in metrics)
    # utilization is relative to the request, so the CPU request must exist
    assert "cpu" in _container(k8s)["resources"]["requests"]


def test_the_autoscaler_scales_on_a_series_the_server_exports(k8s):
    """The HPA's pods metric is what prometheus-adapter's rule names, from a series GET /metrics has."""
    from app.runtime.metrics import Metrics

    (pods,) = [m["pods"] for m in k8s["HorizontalPodAutoscaler"]["spec"]["metrics"] if m["type"] == "Pods"]
    (adapter,) = load_yaml_documents(DEPLOY / "prometheus-adapter.yaml")
    (rule,) = [r for r in adapter["rules"]["custom"] if r["name"]["as"] == pods["metric"]["name"]]
    series = rule["seriesQuery"].split("{")[0]
    metrics = Metrics()
    metrics.watch(lambda: None, SimpleNamespace(slots=1, running=0))  # no models loaded: the request series
    exported = {family.name for family in metrics.registry.collect()}
    assert series in exported or series.removesuffix("_total") in exported, (series, sorted(exported))
    annotations = k8s["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] == "/metrics"


def test_resources_are_sized_from_the_measured_memory(k8s, compose):
    resources = _container(k8s)["resources"]
    request = _mebibytes(resources["requests"]["memory"])
    limit = _mebibytes(resources["limits"]["memory"])
    assert MEASURED_RSS_MIB <= request <= limit
    env = {e["name"]: e["value"] for e in _container(k8s)["env"]}
    cache_size = int(env.get("ATTENTION_LAB_CACHE_SIZE", 256))  # 256: the server's default
    steppers = STEPPERS_PER_POD * MEASURED_STEPPER_MIB
    assert request >= MEASURED_RSS_MIB + steppers, "the request under the working set with the steppers"
    worst = MEASURED_RSS_MIB + steppers + cache_size * MIB_PER_CACHED_RESULT
    assert limit >= 1.1 * worst, f"limit {limit:.0f} MiB under the worst case {worst} MiB plus 10%"
    server = compose["services"]["server"]
    compose_cache = int(server["environment"].get("ATTENTION_LAB_CACHE_SIZE", 256))
    compose_worst = MEASURED_RSS_MIB + steppers + compose_cache * MIB_PER_CACHED_RESULT
    assert _mebibytes(server["deploy"]["resources"]["limits"]["memory"]) >= 1.1 * compose_worst


def test_settings_in_the_manifests_are_settings_the_server_reads(k8s, compose):
    fields = settings_fields()
    names = {e["name"]: e.get("value") for e in _container(k8s).get("env", [])}
    for service in compose["services"].values():
        names.update(service.get("environment", {}))
    ours = {n: v for n, v in names.items() if n.startswith("ATTENTION_LAB_")}
    assert ours
    for name, value in ours.items():
        assert name.removeprefix("ATTENTION_LAB_").lower() in fields, f"{name} is not a Settings field"
        if name == "ATTENTION_LAB_DEVICE":
            assert value in ("auto", "cpu", "cuda")


def test_compose_builds_the_repository_dockerfile():
    compose_dir = DEPLOY
    for doc in load_yaml_documents(DEPLOY / "compose.yaml"):
        for service in app_services(doc).values():
            build = service["build"]
            context = (compose_dir / build["context"]).resolve()
            assert context == ROOT
            assert (context / build.get("dockerfile", "Dockerfile")).is_file()


def test_kustomization_lists_every_manifest():
    (kustomization,) = load_yaml_documents(K8S / "kustomization.yaml")
    listed = set(kustomization["resources"])
    folders = {p.parent.name for p in K8S.glob("*/kustomization.yaml")}  # kustomizations of their own
    assert listed == ({p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}) | folders


def test_the_server_answers_on_the_paths_the_deployment_uses():
    # Importing builds the app without its lifespan: no checkpoint is loaded.
    from app.main import app

    paths = app.openapi()["paths"]
    assert HEALTH_PATH in paths and "get" in paths[HEALTH_PATH]
    assert "post" in paths["/api/translate"]


def test_the_container_check_script_parses():
    script = ROOT / "scripts" / "check-container.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_the_deployment_tells_readers_behind_its_ingress_apart(k8s):
    """FORWARDED_ALLOW_IPS trusts the networks the ingress controller's pods live in (the private
    ranges pod networks are drawn from), never only 127.0.0.1 (every reader behind the ingress one
    client, one budget) nor "*" (any client names itself); and uvicorn, trusting them, takes the
    reader from the right of X-Forwarded-For, which the reader cannot write."""
    import ipaddress

    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    env = {e["name"]: e.get("value") for e in _container(k8s)["env"]}
    trusted = env["FORWARDED_ALLOW_IPS"]
    assert trusted.strip() != "*" and "*" not in trusted.split(",")
    networks = [ipaddress.ip_network(entry.strip()) for entry in trusted.split(",")]  # each one readable
    assert any(not n.is_loopback for n in networks), f"{trusted}: loopback only"
    assert all(n.is_private for n in networks), f"{trusted}: trusts public addresses"
    # the common pod networks: flannel, kind and minikube; k3s; Calico; kind's IPv6
    for pod in ("10.244.1.5", "10.42.0.9", "192.168.3.4", "fd00:10:244::5"):
        assert any(ipaddress.ip_address(pod) in n for n in networks), pod

    def client(peer: str, forwarded: str) -> str:
        seen = {}

        async def app(scope, receive, send):
            seen["client"] = scope["client"][0]

        scope = {"type": "http", "client": (peer, 1), "headers": [(b"x-forwarded-for", forwarded.encode())]}
        middleware = ProxyHeadersMiddleware(app, trusted_hosts=trusted)
        asyncio.run(middleware(scope, None, None))
        return seen["client"]

    assert client("10.244.1.5", "203.0.113.9") == "203.0.113.9"  # the ingress's reader
    assert client("10.244.1.5", "198.51.100.1, 203.0.113.9") == "203.0.113.9"  # what the reader wrote is left
    assert client("203.0.113.9", "198.51.100.1") == "203.0.113.9"  # a reader straight to the pod: itself
