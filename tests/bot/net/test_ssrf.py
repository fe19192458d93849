"""Address and URL rules: every non-public destination is refused unless explicitly opened."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, strategies as st

from bot.net.ssrf import FetchBlocked, FetchPolicy, blocked_ip_reason, check_url

DEFAULT = FetchPolicy()
IP = ipaddress.ip_address

BLOCKED_V4 = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
]
BLOCKED_V6 = [
    "::1/128",
    "::/128",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
    "2001:db8::/32",
    "2001::/32",
    "64:ff9b:1::/48",
    "100::/64",
]


def addresses_in(cidrs: list[str]) -> st.SearchStrategy[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    nets = [ipaddress.ip_network(c) for c in cidrs]
    return st.sampled_from(nets).flatmap(
        lambda n: st.integers(0, n.num_addresses - 1).map(lambda i, n=n: n[i])
    )


@given(addresses_in(BLOCKED_V4))
def test_every_address_in_a_blocked_v4_network_is_blocked_in_every_spelling(ip):
    assert blocked_ip_reason(ip, DEFAULT)
    v = int(ip)
    for wrapped in (
        f"::ffff:{ip}",
        f"64:ff9b::{ip}",
        str(IP((0x2002 << 112) | (v << 80) | 1)),
        f"::ffff:0:{ip}",
    ):
        assert blocked_ip_reason(IP(wrapped), DEFAULT), wrapped
    with pytest.raises(FetchBlocked):
        check_url(f"http://{ip}/", DEFAULT)
    with pytest.raises(FetchBlocked):
        check_url(f"http://[::ffff:{ip}]/", DEFAULT)


@given(addresses_in(BLOCKED_V6))
def test_every_address_in_a_blocked_v6_network_is_blocked(ip):
    assert blocked_ip_reason(ip, DEFAULT)
    with pytest.raises(FetchBlocked):
        check_url(f"http://[{ip}]/", DEFAULT)


@given(addresses_in(["8.0.0.0/8", "1.1.1.0/24", "2606:4700::/32", "2a00:1450::/32"]))
def test_public_addresses_pass(ip):
    assert blocked_ip_reason(ip, DEFAULT) is None


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",
        "fd00:ec2::254",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "2002:a9fe:a9fe::1",
        "::127.0.0.1",
        "fe80::1%eth0",
    ],
)
def test_metadata_and_tunnelled_addresses_are_blocked(address):
    assert blocked_ip_reason(IP(address), DEFAULT)


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"])
def test_tunnelled_public_addresses_pass(address):
    assert blocked_ip_reason(IP(address), DEFAULT) is None


def test_allow_private_opens_exactly_the_listed_network():
    policy = FetchPolicy(allow_private=("127.0.0.1/32",))
    assert blocked_ip_reason(IP("127.0.0.1"), policy) is None
    assert blocked_ip_reason(IP("::ffff:127.0.0.1"), policy) is None
    assert blocked_ip_reason(IP("127.0.0.2"), policy)
    assert blocked_ip_reason(IP("10.0.0.1"), policy)


def test_bad_policy_fails_at_construction():
    with pytest.raises(ValueError):
        FetchPolicy(allow_private=("not-a-cidr",))
    with pytest.raises(ValueError):
        FetchPolicy(max_bytes=0)


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/",
        "http://0x7f000001/",
        "http://017700000001/",
        "http://127.1/",
        "http://0177.0.0.1/",
        "http://127.0.0.1/",
        "http://[::1]/",
        "http://[::ffff:7f00:1]/",
        "http://[0:0:0:0:0:ffff:127.0.0.1]/",
        "http://0/",
        "http://0.0.0.0/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA/",
        "http://instance-data./",
    ],
)
def test_internal_targets_and_odd_ip_spellings_are_refused(url):
    with pytest.raises(FetchBlocked):
        check_url(url, DEFAULT)


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("file:///etc/passwd", "scheme"),
        ("gopher://example.com/", "scheme"),
        ("ftp://example.com/", "scheme"),
        ("javascript:alert(1)", "scheme"),
        ("example.com/x", "scheme"),
        ("http://user:pw@example.com/", "credentials"),
        ("http://user@example.com/", "credentials"),
        ("https://example.com:8443/", "port"),
        ("http:///nohost", "host"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com/\r\nX: 1", "whitespace"),
    ],
)
def test_malformed_or_disallowed_urls_are_refused(url, fragment):
    with pytest.raises(FetchBlocked, match=fragment):
        check_url(url, DEFAULT)


def test_public_url_is_normalized():
    target = check_url("HTTPS://API.CoinGecko.com./api/v3/ping?x=1", DEFAULT)
    assert (target.scheme, target.host, target.port, target.ip) == ("https", "api.coingecko.com", 443, None)


def test_domain_allow_and_deny_lists():
    policy = FetchPolicy(
        allow_domains=("*.coingecko.com", "etherscan.io"), deny_domains=("evil.coingecko.com",)
    )
    assert check_url("https://api.coingecko.com/x", policy).host == "api.coingecko.com"
    assert check_url("https://Etherscan.IO./tx", policy).host == "etherscan.io"
    for url, reason in [
        ("https://evil.coingecko.com/", "deny"),
        ("https://coingecko.com.evil.net/", "allow list"),
        ("https://example.com/", "allow list"),
        ("https://8.8.8.8/", "allow list"),
    ]:
        with pytest.raises(FetchBlocked, match=reason):
            check_url(url, policy)


def test_international_domains_are_matched_in_punycode():
    policy = FetchPolicy(deny_domains=("bücher.example",))
    with pytest.raises(FetchBlocked, match="deny"):
        check_url("https://BÜCHER.example/", policy)
    assert check_url("https://bücher.example.org/", FetchPolicy()).host == "xn--bcher-kva.example.org"
