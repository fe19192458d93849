"""Which URLs and addresses the bot may fetch: default deny for everything that is not public.

The model chooses URLs, and a URL is an easy way to reach the cloud metadata service, the user's
router, the signer's control plane or a local node. So: only http(s), only allowed ports, no
credentials in URLs, domain allow/deny lists, and every address a name resolves to must be
public unless the user listed its network in `allow_private`. Host checks here are on the
literal URL; fetch.py repeats the address check on whatever DNS returns, on every hop.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from dataclasses import dataclass
from functools import cached_property

from yarl import URL

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

__all__ = [
    "FetchError",
    "FetchBlocked",
    "FetchPolicy",
    "ParsedTarget",
    "blocked_ip_reason",
    "blocked_host_reason",
    "check_url",
    "IPAddress",
]


class FetchError(Exception):
    """A fetch failed. The message is shown to the user and the model: host and reason only."""


class FetchBlocked(FetchError):
    """A fetch was refused by policy before (or instead of) talking to the target."""


@dataclass(frozen=True)
class FetchPolicy:
    allow_domains: tuple[str, ...] = ()
    """Glob patterns (`*.coingecko.com`); empty means any public domain."""
    deny_domains: tuple[str, ...] = ()
    """Checked before allow_domains."""
    allow_private: tuple[str, ...] = ()
    """CIDRs the user explicitly opened, e.g. their own node."""
    allowed_ports: tuple[int, ...] = (80, 443)
    max_bytes: int = 2_000_000
    timeout: float = 15.0
    """Seconds for the whole fetch, all redirects included."""
    max_redirects: int = 5

    def __post_init__(self) -> None:
        _ = self.private_networks  # a bad CIDR fails at configuration time, not at first fetch
        if self.max_bytes <= 0 or self.timeout <= 0 or self.max_redirects < 0:
            raise ValueError("max_bytes and timeout must be positive, max_redirects >= 0")

    @cached_property
    def private_networks(self) -> tuple[IPNetwork, ...]:
        return tuple(ipaddress.ip_network(c.strip(), strict=False) for c in self.allow_private)


@dataclass(frozen=True)
class ParsedTarget:
    url: URL
    scheme: str
    host: str
    """Lowercase, IDNA (punycode), no trailing dot; IPv6 without brackets."""
    port: int
    ip: IPAddress | None
    """Set when the URL names a literal address."""


_V4_BLOCKED: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "'this network' address"),
    ("10.0.0.0/8", "private address"),
    ("100.64.0.0/10", "carrier-grade NAT address"),
    ("127.0.0.0/8", "loopback address"),
    ("169.254.0.0/16", "link-local address (cloud metadata lives here)"),
    ("172.16.0.0/12", "private address"),
    ("192.0.0.0/24", "IETF protocol address"),
    ("192.0.2.0/24", "documentation address"),
    ("192.88.99.0/24", "6to4 relay address"),
    ("192.168.0.0/16", "private address"),
    ("198.18.0.0/15", "benchmarking address"),
    ("198.51.100.0/24", "documentation address"),
    ("203.0.113.0/24", "documentation address"),
    ("224.0.0.0/4", "multicast address"),
    ("240.0.0.0/4", "reserved address"),
    ("255.255.255.255/32", "broadcast address"),
)
_V6_BLOCKED: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified address"),
    ("::1/128", "loopback address"),
    ("64:ff9b:1::/48", "local-use NAT64 address"),
    ("100::/64", "discard-only address"),
    ("2001::/32", "Teredo address"),
    ("2001:db8::/32", "documentation address"),
    ("2001:10::/28", "ORCHID address"),
    ("3fff::/20", "documentation address"),
    ("fc00::/7", "unique-local (private) address"),
    ("fe80::/10", "link-local address"),
    ("fec0::/10", "site-local address"),
    ("ff00::/8", "multicast address"),
)
_BLOCKED = tuple((ipaddress.ip_network(net), reason) for net, reason in _V4_BLOCKED + _V6_BLOCKED)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_COMPAT = ipaddress.ip_network("::/96")
_V4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")

# Names that reach a cloud metadata service without any address trick.
_METADATA_HOSTS = frozenset(
    (
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.packet.net",
        "metadata.platformequinix.com",
        "metadata.oraclecloud.com",
    )
)
_HOST_CHARS = re.compile(r"[a-z0-9._-]+")
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries to an IPv4 host (mapped, compat, NAT64, 6to4)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _V4_TRANSLATED or (ip in _V4_COMPAT and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _explicitly_allowed(ip: IPAddress, policy: FetchPolicy) -> bool:
    return any(ip.version == net.version and ip in net for net in policy.private_networks)


def blocked_ip_reason(ip: IPAddress, policy: FetchPolicy) -> str | None:
    """Why the bot must not connect to `ip`, or None if it may."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        return "scoped IPv6 address"
    if _explicitly_allowed(ip, policy):
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            reason = blocked_ip_reason(inner, policy)
            return f"IPv6 address embedding a {reason}" if reason else None
    for net, reason in _BLOCKED:
        if ip.version == net.version and ip in net:
            return reason
    if not ip.is_global:
        return "non-public address"  # anything special-purpose the table above does not name
    return None


def blocked_host_reason(host: str) -> str | None:
    """Names refused whatever they resolve to."""
    if host in _METADATA_HOSTS or host.endswith(".metadata.google.internal"):
        return "cloud metadata host"
    return None


def _normalize_host(raw: str) -> str:
    host = raw.rstrip(".").lower()
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise FetchBlocked(f"{raw!r}: invalid international domain name") from exc
    return host


def _host_matches(host: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(host, _normalize_host(p.strip())) for p in patterns if p.strip())


def _literal_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    # Legacy spellings socket still maps onto an address: 2130706433, 0x7f000001, 017700000001,
    # 127.1. Not DNS names either (no TLD is numeric), so they are refused rather than resolved.
    last = host.rsplit(".", 1)[-1]
    if _NUMERIC_LABEL.fullmatch(last):
        raise FetchBlocked(f"{host}: non-canonical numeric IP address")
    return None


def check_url(url: str | URL, policy: FetchPolicy) -> ParsedTarget:
    """Parse and vet a URL (before any DNS); raise FetchBlocked with a user-safe reason.

    Parsed with yarl, the same parser aiohttp uses, so what we check is what gets connected.
    """
    if isinstance(url, str):
        if len(url) > 8192 or any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
            raise FetchBlocked("URL is too long or contains whitespace/control characters")
        try:
            parsed = URL(url)
        except (ValueError, TypeError) as exc:
            raise FetchBlocked("URL could not be parsed") from exc
    else:
        parsed = url
    scheme = (parsed.scheme or "").lower()
    if scheme not in ("http", "https"):
        raise FetchBlocked(f"scheme {scheme or '(none)'!r} is not allowed (only http and https)")
    if parsed.raw_user is not None or parsed.raw_password is not None:
        raise FetchBlocked("URLs with embedded credentials are not allowed")
    raw_host = parsed.raw_host or ""
    if not raw_host:
        raise FetchBlocked("URL has no host")
    host = _normalize_host(raw_host)
    ip = None
    if ":" in host:  # IPv6 literal (yarl strips the brackets)
        if "%" in host:
            raise FetchBlocked(f"{host}: scoped IPv6 addresses are not allowed")
        ip = _literal_ip(host)
        if ip is None:
            raise FetchBlocked(f"{host}: invalid IPv6 address")
    elif not _HOST_CHARS.fullmatch(host) or ".." in host:
        raise FetchBlocked(f"{host[:100]}: invalid host name")
    else:
        ip = _literal_ip(host)
    reason = blocked_host_reason(host)
    if reason is None and ip is not None:
        reason = blocked_ip_reason(ip, policy)
    if reason:
        raise FetchBlocked(f"{host}: {reason}")
    if _host_matches(host, policy.deny_domains):
        raise FetchBlocked(f"{host}: domain is on the deny list")
    if policy.allow_domains and not _host_matches(host, policy.allow_domains):
        raise FetchBlocked(f"{host}: domain is not on the allow list")
    port = parsed.port
    if port is None or port not in policy.allowed_ports:
        raise FetchBlocked(f"{host}: port {port} is not allowed")
    return ParsedTarget(parsed, scheme, host, port, ip)
