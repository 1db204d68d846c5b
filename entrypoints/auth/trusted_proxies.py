"""Reverse proxies this node trusts (`RUNNEL_TRUSTED_PROXIES`, ADR 0033).

Rules:
- Trust is decided on the TCP peer's address, never on anything the request says:
  a peer is trusted when it falls in one of the configured networks. An empty
  list (the default) trusts nobody.
- A connection from a trusted proxy is held to the node's global cap
  (`RUNNEL_MAX_CONNECTIONS`), not to the per-address cap: it carries many
  clients, and the proxy limits per client (`limit_conn` in the nginx kit).
- Only on a trusted peer's requests do `X-Forwarded-For` and
  `X-Forwarded-Proto` name the client (uvicorn's `ProxyHeadersMiddleware`, with
  these networks as `forwarded_allow_ips`): the client is the right-most
  address of the chain that is not itself a trusted proxy, so an address the
  client wrote into the header itself is never taken. From any other peer the
  headers are ignored.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(values: tuple[str, ...]) -> tuple[str, ...]:
    """Each address or network in its canonical form (`10.0.0.5` → `10.0.0.5/32`), or
    `ValueError` naming the first that is neither (or `*`, which would trust everyone)."""
    parsed: list[str] = []
    for value in values:
        text = value.strip()
        if text == "*":
            raise ValueError("'*' would let every client choose its own address: list the "
                             "proxies' addresses or networks")
        try:
            parsed.append(str(ipaddress.ip_network(text, strict=True)))
        except ValueError:
            raise ValueError(f"{text!r} is not an IP address or network (for example "
                             "10.0.0.5, 10.1.0.0/16 or fd00::/8; no host bits set past "
                             "the prefix)") from None
    return tuple(dict.fromkeys(parsed))


class TrustedProxies:
    """Membership of a peer address in the trusted networks (cached per address)."""

    def __init__(self, networks: tuple[str, ...]) -> None:
        self.networks: tuple[Network, ...] = tuple(
            ipaddress.ip_network(network) for network in networks)
        self._check = lru_cache(maxsize=4096)(self._compute)

    def __contains__(self, address: str) -> bool:
        return bool(self.networks) and self._check(address)

    def _compute(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False  # not an IP peer (a unix socket): never a trusted proxy
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)
