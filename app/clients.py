"""Who a client is: the name each client's share of the expensive experiments is counted under
(app/runtime/shares.py), and what the server knows of the proxies in front of it. Torch-free.

- `client_name(host)` / `client_of(scope)`: an IPv4 client is its address; an IPv6 client is its
  /64 ("2001:db8:1:2::/64"), since a home, an office or a phone is handed a whole /64 and may use
  any of its 2**64 addresses; an IPv4-mapped IPv6 address (::ffff:1.2.3.4, how a dual-stack socket
  shows an IPv4 peer) is that IPv4 address; anything else (no client, a unix socket, Starlette's
  "testclient") is UNKNOWN, one client for all of them.
- The address is the one uvicorn's ProxyHeadersMiddleware leaves in the scope: behind a proxy it
  trusts (FORWARDED_ALLOW_IPS or `--forwarded-allow-ips`), the first address of X-Forwarded-For,
  from the right, that is not a trusted proxy's; else the connection's peer.
- `Forwarding`: the trusted proxies as uvicorn reads them (FORWARDED_ALLOW_IPS, else uvicorn's
  default), told in the log at start-up (a warning for "*": every client then names itself), and
  the last peer seen sending X-Forwarded-For without being trusted (GET /api/health's `clients`).
- `ForwardedFor`: a plain ASGI middleware that notices a request carrying X-Forwarded-For whose
  client is none of the addresses the header names. uvicorn did not believe the header (the peer is
  not a trusted proxy, or proxy headers are off), so every reader behind that proxy is counted as
  the proxy: one budget for all of them. Logged once, and reported until the process ends.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("attention_lab.clients")
UNKNOWN = "unknown"  # every client without an IP address
IPV6_PREFIX = 64
BY = "address, IPv6 by /64"
HEADER = b"x-forwarded-for"
ENV = "FORWARDED_ALLOW_IPS"
# uvicorn's own default when neither --forwarded-allow-ips nor FORWARDED_ALLOW_IPS is given
UVICORN_DEFAULT = "127.0.0.1,::1"


def client_name(host: str | None) -> str:
    """The client a connection's address belongs to (the module's docstring says how)."""
    if not host:
        return UNKNOWN
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])  # no brackets, no zone
    except ValueError:
        return UNKNOWN
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)


def client_of(scope: Scope) -> str:
    """The client of a request's scope, from the address uvicorn put there."""
    return client_name(_host(scope))


def _host(scope: Scope) -> str | None:
    client = scope.get("client")
    return client[0] if client else None


def _entry_host(entry: str) -> str:
    """One X-Forwarded-For entry's host, as uvicorn reads it: "1.2.3.4:80" and "[::1]:80" lose their
    port; anything else is taken as it is."""
    entry = entry.strip()
    if entry.startswith("["):
        end = entry.find("]")
        return entry if end == -1 else entry[1:end]
    if entry.count(":") == 1:
        host, port = entry.rsplit(":", 1)
        return host if port.isdigit() else entry
    return entry


def names(forwarded: str, host: str) -> bool:
    """Whether `host` is one of the addresses an X-Forwarded-For value names (where uvicorn, having
    believed the header, took the client from). A substring test first: usually a clear no."""
    if host not in forwarded:
        return False
    return any(_entry_host(entry) == host for entry in reversed(forwarded.split(",")))


class Forwarding:
    """The proxies trusted to say who their clients are, and the last untrusted one seen."""

    def __init__(self, trusted: str = UVICORN_DEFAULT, source: str = ENV):
        self.source = source  # where the list came from, for the log
        self.everyone = trusted == "*"  # uvicorn trusts every peer only for "*" alone
        self.trusted = [entry.strip() for entry in trusted.split(",") if entry.strip()]
        self.one_client_behind: str | None = None
        self._warned = False

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> Forwarding:
        """What uvicorn trusts unless its command line gives --forwarded-allow-ips (the shipped
        command lines do not)."""
        if ENV in environ:
            return cls(environ[ENV])
        return cls(UVICORN_DEFAULT, f"uvicorn's default ({ENV} unset)")

    def unreadable(self) -> list[str]:
        """Entries that are neither an address nor a network: uvicorn compares them as names, which
        a peer's address never is."""
        if self.everyone:
            return []
        bad = []
        for entry in self.trusted:
            try:
                ipaddress.ip_network(entry, strict=False) if "/" in entry else ipaddress.ip_address(entry)
            except ValueError:
                bad.append(entry)
        return bad

    def start_up(self) -> None:
        """Says in the log how clients are told apart and whose X-Forwarded-For is believed."""
        log.info("clients are told apart by %s; X-Forwarded-For is believed only from %s, as %s lists "
                 "them (uvicorn's --forwarded-allow-ips overrides it); a reader behind any other proxy "
                 "is counted as that proxy", BY, ",".join(self.trusted), self.source)
        if self.everyone:
            log.warning("%s is *: every peer's X-Forwarded-For is believed, so any client can name itself "
                        "and take a fresh share of the experiments at each ask; list the proxies instead",
                        ENV)
        for entry in self.unreadable():
            log.warning("%s entry %r is neither an address nor a network: no peer matches it", ENV, entry)

    def not_believed(self, peer: str) -> None:
        """A request with X-Forwarded-For came from `peer`, which uvicorn did not trust."""
        self.one_client_behind = peer
        if not self._warned:
            self._warned = True
            log.warning("a request with X-Forwarded-For came from %s, not a trusted proxy (%s, from %s): "
                        "uvicorn ignored the header, so every reader behind that proxy is one client "
                        "with one share of the experiments; if it is your proxy, add its address to %s "
                        "(deploy/README.md). GET /api/health's clients.one_client_behind names the "
                        "latest such peer", peer, ",".join(self.trusted), self.source, ENV)

    def report(self) -> dict:
        return {"by": BY, "trusted_proxies": list(self.trusted), "one_client_behind": self.one_client_behind}


class ForwardedFor:
    """Notices X-Forwarded-For that uvicorn did not believe (a header scan per request; the header
    is read only when there is one)."""

    def __init__(self, app: ASGIApp, forwarding: Forwarding):
        self.app = app
        self.forwarding = forwarding

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            values = [value for name, value in scope["headers"] if name == HEADER]
            forwarded = b",".join(values).decode("latin-1") if values else ""
            if forwarded.strip(" ,"):  # an empty header names nobody: nothing to believe
                host = _host(scope)
                if not host or not names(forwarded, host):
                    self.forwarding.not_believed(host or UNKNOWN)
        await self.app(scope, receive, send)
