"""The webhook address rule (``channels/netguard.py``) on its own: which addresses are refused,
how the allow-list widens the rule, how URLs are read. No network: host names here are address
literals, ``localhost`` (the hosts file) or a resolver given to ``check``."""

from __future__ import annotations

import ipaddress

import pytest

from tidings.channels import netguard
from tidings.channels.netguard import AllowList, Unresolvable, UnsafeUrl
from tidings.config import Config
from tidings.engine import Tidings
from tidings.exceptions import ConfigError

REFUSED = {
    "127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback",
    "0.0.0.0": "unspecified", "::": "unspecified",
    "10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private",
    "fc00::1": "private", "fd12:3456::1": "private",
    "169.254.169.254": "link-local", "fe80::1": "link-local",
    "224.0.0.1": "multicast", "239.255.255.250": "multicast", "ff02::1": "multicast",
    "240.0.0.1": "private", "255.255.255.255": "private",  # reserved; Python files them as
    "100.64.0.1": "non-public",                               # private, shared (CGN)
    "192.0.2.1": "private", "2001:db8::1": "private",       # documentation
    "::ffff:127.0.0.1": "loopback", "::ffff:169.254.169.254": "link-local",
    "::ffff:10.0.0.1": "private", "2002:7f00:1::1": "loopback",         # 6to4
    "64:ff9b::a9fe:a9fe": "link-local", "::7f00:1": "loopback",          # NAT64, compatible
    "64:ff9b:1::1": "private",
}
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", sorted(REFUSED))
def test_internal_addresses_are_refused(address: str) -> None:
    reason = netguard.forbidden(ipaddress.ip_address(address))
    assert reason is not None and reason.startswith(REFUSED[address])


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert netguard.forbidden(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]:8080/hook",
    "https://0x7f000001/", "https://2130706433/", "https://017700000001/", "https://127.1/",
    "https://169.254.169.254/latest/meta-data/", "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:7f00:1]/", "https://0.0.0.0:6379/", "https://10.0.0.1/",
    "https://[fe80::1]/", "https://224.0.0.1/", "https://user:pw@127.0.0.1/",
    "https://evil.example\\@127.0.0.1/",
])
def test_urls_leading_inside_are_refused(url: str) -> None:
    with pytest.raises(UnsafeUrl, match="address"):
        netguard.check(url, AllowList())


@pytest.mark.parametrize("url", ["http://8.8.8.8/hook", "ftp://8.8.8.8/", "https:///hook",
                                 "hook", "https://0177.0.0.1/", "javascript:alert(1)"])
def test_plain_http_other_schemes_and_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(UnsafeUrl):
        netguard.check(url, AllowList())


def test_a_public_https_url_is_accepted_and_keeps_its_host_and_port() -> None:
    target = netguard.check("https://8.8.8.8:8443/hook?x=1", AllowList())
    assert (target.host, target.port, target.addresses) == ("8.8.8.8", 8443, ("8.8.8.8",))
    assert str(target.url) == "https://8.8.8.8:8443/hook?x=1"


def test_every_address_of_a_name_must_be_public() -> None:
    def resolver(host: str, port: int) -> list[str]:
        return ["8.8.8.8", "10.0.0.7"]

    with pytest.raises(UnsafeUrl, match=r"10\.0\.0\.7, a private address"):
        netguard.check("https://mixed.example/hook", AllowList(), resolver=resolver)


def test_the_allow_list_names_hosts_and_networks() -> None:
    allow = AllowList.parse(["hooks.internal", "127.0.0.1", " 10.0.0.0/8 ", "[fd00::1]", ""])
    assert allow.names == {"hooks.internal"}

    def internal(host: str, port: int) -> list[str]:
        names = {"hooks.internal": ["192.168.7.7"], "svc.corp": ["10.9.9.9"],
                 "half.corp": ["10.9.9.9", "192.168.0.1"], "localhost": ["127.0.0.1"]}
        return names.get(host, [host])  # an address literal resolves to itself

    # named hosts and hosts inside listed networks may use http and private addresses
    for url in ("http://hooks.internal/x", "http://127.0.0.1:9/x", "http://10.1.2.3/x",
                "http://[fd00::1]/x", "http://svc.corp/x", "https://[::ffff:10.0.0.1]/x",
                "http://localhost/x"):  # every address of the name is in a listed network
        netguard.check(url, allow, resolver=internal)
    # the list widens nothing else
    for url in ("http://127.0.0.2/x", "https://192.168.1.1/x", "http://half.corp/x"):
        with pytest.raises(UnsafeUrl):
            netguard.check(url, allow, resolver=internal)
    with pytest.raises(ValueError, match="not a host name"):
        AllowList.parse(["10.0.0.0/33"])


def test_a_name_that_does_not_resolve_is_retried_at_delivery_and_judged_when_saved() -> None:
    def nothing(host: str, port: int) -> list[str]:
        raise Unresolvable(f"{host} does not resolve")

    with pytest.raises(Unresolvable):
        netguard.check("https://gone.example/x", AllowList(), resolver=nothing)
    saved = netguard.check("https://gone.example/x", AllowList(), resolver=nothing,
                           unresolved_ok=True)
    assert saved.addresses == ()
    with pytest.raises(UnsafeUrl, match="https"):
        netguard.check("http://gone.example/x", AllowList(), resolver=nothing,
                       unresolved_ok=True)


def test_a_bad_allow_list_stops_the_engine_at_start() -> None:
    with pytest.raises(ConfigError, match="TIDINGS_WEBHOOK_ALLOW"):
        Tidings(Config(database_url="memory://", webhook_allow=("not a host!",)))


def test_settings_come_from_the_environment() -> None:
    config = Config.from_env({"TIDINGS_WEBHOOK_ALLOW": "hooks.internal, 10.0.0.0/8",
                              "TIDINGS_WEBHOOK_CONNECT_TIMEOUT": "1.5",
                              "TIDINGS_WEBHOOK_READ_TIMEOUT": "2",
                              "TIDINGS_WEBHOOK_CONCURRENCY": "0"})
    assert config.webhook_allow == ("hooks.internal", "10.0.0.0/8")
    assert (config.webhook_connect_timeout, config.webhook_read_timeout) == (1.5, 2.0)
    assert config.webhook_concurrency == 0
    defaults = Config.from_env({})
    assert (defaults.webhook_connect_timeout, defaults.webhook_read_timeout,
            defaults.webhook_concurrency, defaults.webhook_allow) == (3.0, 5.0, 4, ())
