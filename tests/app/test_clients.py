"""Who a client is (app/clients.py): an IPv6 client is its /64, a proxy's X-Forwarded-For is believed
only from a trusted peer, and the server says so when a proxy's readers are all one client."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.clients import UNKNOWN, Forwarding, client_name, client_of
from app.config import REPO_ROOT
from app.main import create_app
from tests.app.conftest import tiny_settings

# one ask of a shared experiment: a new timing measurement (share_timing below: one a minute)
TIMING = {"lengths": [2, 4], "refresh": True}
TRUSTED = "10.0.0.0/8"  # the proxies these tests trust, as FORWARDED_ALLOW_IPS lists them


@pytest.mark.parametrize(("host", "name"), [
    ("192.0.2.7", "192.0.2.7"),
    ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # the same /64: the same client
    ("2001:db8:1:3::1", "2001:db8:1:3::/64"),  # the next /64: another client
    ("2001:DB8:0001:0002:0:0:0:9", "2001:db8:1:2::/64"),  # however it is written
    ("fe80::1%eth0", "fe80::/64"),  # a zone is not part of the address
    ("::ffff:198.51.100.4", "198.51.100.4"),  # an IPv4 peer seen through a dual-stack socket
    ("::1", "::/64"),
    (None, UNKNOWN), ("", UNKNOWN), ("testclient", UNKNOWN), ("/run/app.sock", UNKNOWN),
])
def test_a_client_is_its_ipv4_address_or_its_ipv6_64(host, name):
    assert client_name(host) == name
    assert client_of({"type": "http", "client": (host, 1) if host is not None else None}) == name


def test_two_addresses_of_one_ipv6_64_share_one_budget(tiny_checkpoints):
    """A client with a /64 cannot take a fresh share from each of its 2^64 addresses."""
    app = create_app(tiny_settings(tiny_checkpoints, shares=True, share_timing="1/1 minute"))
    with TestClient(app, client=("2001:db8:1:2::1", 40001)) as first:
        assert first.post("/api/timing", json=TIMING).status_code == 200
        same_64 = TestClient(app, client=("2001:db8:1:2:abcd::9", 40002))
        refused = same_64.post("/api/timing", json=TIMING)
        assert refused.status_code == 429, "another address of the same /64 got a budget of its own"
        assert "your share of timing" in refused.json()["detail"]

        def ask(host: str) -> int:
            return TestClient(app, client=(host, 40003)).post("/api/timing", json=TIMING).status_code

        assert ask("::ffff:192.0.2.7") == 200  # 192.0.2.7 seen through a dual-stack socket
        assert ask("192.0.2.7") == 429  # the same client
        assert ask("2001:db8:1:3::1") == 200 and ask("192.0.2.8") == 200  # another /64, another address


def _served(tiny_checkpoints, monkeypatch, trusted: str = TRUSTED):
    """The app as uvicorn serves it: its ProxyHeadersMiddleware, trusting FORWARDED_ALLOW_IPS, in front."""
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", trusted)
    app = create_app(tiny_settings(tiny_checkpoints, shares=True, share_timing="1/1 minute"))
    return app, ProxyHeadersMiddleware(app, trusted_hosts=trusted)


def test_x_forwarded_for_from_an_untrusted_peer_is_not_believed_and_health_says_so(
        tiny_checkpoints, monkeypatch, caplog):
    app, served = _served(tiny_checkpoints, monkeypatch)
    caplog.set_level(logging.INFO, logger="attention_lab")
    with TestClient(served, client=("10.1.2.3", 40001)) as ingress:  # a trusted proxy
        health = ingress.get("/api/health").json()["clients"]
        assert health == {"by": "address, IPv6 by /64", "trusted_proxies": [TRUSTED], "one_client_behind": None}
        assert "clients are told apart by address, IPv6 by /64" in caplog.text
        # two readers behind the trusted proxy: one budget each, taken from the right of the header
        for reader in ("198.51.100.1", "198.51.100.2"):
            forwarded = {"X-Forwarded-For": f"203.0.113.66, {reader}"}  # the left part is the reader's to write
            assert ingress.post("/api/timing", json=TIMING, headers=forwarded).status_code == 200
        assert ingress.get("/api/health").json()["clients"]["one_client_behind"] is None
        assert "X-Forwarded-For came from" not in caplog.text

        # a peer that is no trusted proxy cannot name itself: its header is ignored, its budget is one
        stranger = TestClient(served, client=("192.0.2.50", 40002))
        for pretend in ("198.51.100.3", "198.51.100.4"):
            answer = stranger.post("/api/timing", json=TIMING, headers={"X-Forwarded-For": pretend})
            assert answer.status_code == (200 if pretend.endswith(".3") else 429)
        assert ingress.get("/api/health").json()["clients"]["one_client_behind"] == "192.0.2.50"
        warnings = [r for r in caplog.records if "X-Forwarded-For came from 192.0.2.50" in r.getMessage()]
        assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING  # once, not per request

        # an empty header names nobody, and a peer that names itself is counted as itself all the same
        TestClient(served, client=("192.0.2.51", 40003)).get("/api/health", headers={"X-Forwarded-For": " "})
        TestClient(served, client=("192.0.2.52", 40004)).get("/api/health",
                                                             headers={"X-Forwarded-For": "192.0.2.52:40004"})
        assert ingress.get("/api/health").json()["clients"]["one_client_behind"] == "192.0.2.50"


def test_a_proxy_left_untrusted_is_named_in_health(tiny_checkpoints, monkeypatch):
    """The shipped Kubernetes manifest used to trust only 127.0.0.1: the ingress's readers were one client."""
    _, served = _served(tiny_checkpoints, monkeypatch, trusted="127.0.0.1")
    with TestClient(served, client=("10.244.1.5", 40001)) as ingress:
        forwarded = {"X-Forwarded-For": "198.51.100.1"}
        assert ingress.post("/api/timing", json=TIMING, headers=forwarded).status_code == 200
        other_reader = {"X-Forwarded-For": "198.51.100.2"}
        assert ingress.post("/api/timing", json=TIMING, headers=other_reader).status_code == 429
        clients = ingress.get("/api/health").json()["clients"]
        assert clients == {"by": "address, IPv6 by /64", "trusted_proxies": ["127.0.0.1"],
                           "one_client_behind": "10.244.1.5"}


def test_start_up_warns_when_every_peer_is_believed(caplog):
    caplog.set_level(logging.INFO, logger="attention_lab")
    Forwarding("*").start_up()
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "FORWARDED_ALLOW_IPS is *" in warning and "any client can name itself" in warning
    caplog.clear()
    Forwarding("10.0.0.0/8, 10.0.0.0/33, ingress").start_up()
    unreadable = sorted(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert len(unreadable) == 2 and "'10.0.0.0/33'" in unreadable[0] and "'ingress'" in unreadable[1]
    caplog.clear()
    Forwarding().start_up()  # uvicorn's default: loopback only, nothing to warn about
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "only from 127.0.0.1,::1, as FORWARDED_ALLOW_IPS lists them" in caplog.text
    caplog.clear()
    Forwarding.from_environ({}).start_up()
    assert "only from 127.0.0.1,::1, as uvicorn's default (FORWARDED_ALLOW_IPS unset) lists them" in caplog.text


def test_trust_is_read_as_uvicorn_reads_it():
    assert Forwarding.from_environ({}).report()["trusted_proxies"] == ["127.0.0.1", "::1"]
    assert Forwarding.from_environ({"FORWARDED_ALLOW_IPS": " 10.0.0.0/8 , fd00::/8"}).trusted == ["10.0.0.0/8",
                                                                                                 "fd00::/8"]
    assert Forwarding("*").everyone and not Forwarding("*, 10.0.0.1").everyone  # as uvicorn: "*" alone


def test_the_module_loads_without_torch():
    """app/clients.py is read at every request and by tools: it needs neither torch nor the models."""
    code = "import sys, app.clients; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
