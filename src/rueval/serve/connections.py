"""The board's connections, as uvicorn serves them (its h11 protocol), with what uvicorn lacks:

- at most ``connections`` open at once, and ``per_address`` from one client address: a connection
  beyond either cap is answered 503 and closed at once, so a flood of connections cannot use up the
  process's files ("Too many open files") nor its memory;
- a connection that has not sent a whole request's headers within ``read_timeout_s`` (of opening,
  or of its previous response) is closed. A body that stops arriving for as long is refused by the
  application (rueval.serve.app.Guard: 408).

uvicorn's own ``limit_concurrency`` answers 503 while as many requests are in progress, its
keep-alive timeout closes a connection idle after a response, and h11 refuses request headers over
16 KiB (400).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.utils import get_remote_addr

log = logging.getLogger("rueval.serve.connections")


@dataclass(frozen=True)
class ConnectionLimits:
    connections: int = 500
    per_address: int = 50  # 0: no cap
    read_timeout_s: float = 30.0
    # --trusted-proxy's addresses and networks: every user's connection comes from them, so the
    # per-address cap leaves them out (the total cap still holds)
    proxies: tuple[str, ...] = ()

    def from_proxy(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in ipaddress.ip_network(proxy, strict=False) for proxy in self.proxies)


def _refusal(reason: str) -> bytes:
    body = f"{reason}; try again later\n".encode()
    head = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 10\r\n"
    return f"{head}connection: close\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the caps and the header timeout above (``limits`` is set on a
    subclass per server: limited_protocol)."""

    limits = ConnectionLimits()
    refused = False
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        host = (get_remote_addr(transport) or ("unknown",))[0]
        reason = self._over_cap(host)
        if reason:
            self.refused = True
            log.warning("refused a connection from %s: %s", host, reason)
            transport.write(_refusal(reason))
            transport.close()
            return
        super().connection_made(transport)
        self._await_request()

    def _over_cap(self, host: str) -> str | None:
        if len(self.connections) >= self.limits.connections:
            return f"{len(self.connections)} connections open, the board's limit"
        if self.limits.per_address and not self.limits.from_proxy(host):
            mine = len([other for other in self.connections if (getattr(other, "client", None) or ("",))[0] == host])
            if mine >= self.limits.per_address:
                return f"{mine} connections open from {host}, the board's limit for one address"
        return None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_request():
            self._stop_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._await_request()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.refused:
            return
        self._stop_timer()
        super().connection_lost(exc)

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _await_request(self) -> None:
        self._stop_timer()
        if not self._in_request() and not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.limits.read_timeout_s, self._no_request)

    def _no_request(self) -> None:
        if not self._in_request() and not self.transport.is_closing():
            host = self.client[0] if self.client else "unknown"
            log.warning("closed a connection from %s: no request within %g s", host, self.limits.read_timeout_s)
            self.transport.close()

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None


def limited_protocol(limits: ConnectionLimits) -> type[LimitedH11Protocol]:
    return type("LimitedH11Protocol", (LimitedH11Protocol,), {"limits": limits})


def server_config(app: Any, host: str, port: int, limits: ConnectionLimits) -> uvicorn.Config:
    """uvicorn's configuration of the board: the protocol above, logs through the service's own
    (rueval.serve.logs, so that repeated lines are held back)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=limited_protocol(limits),
        limit_concurrency=limits.connections,
        log_config=None,
        log_level="info",
        timeout_graceful_shutdown=5,
        proxy_headers=False,  # X-Forwarded-For only from --trusted-proxy (rueval.serve.app)
    )
