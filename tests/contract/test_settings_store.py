"""SettingsStore: declared types, preferences, bounced addresses."""

from __future__ import annotations

from contract_kit import read, write

from tidings import ports
from tidings.clock import FrozenClock


def test_types_are_stored_and_replaced(store: ports.Store, clock: FrozenClock) -> None:
    assert read(store, lambda tx: tx.settings.load_types()) == []
    write(store, lambda tx: tx.settings.save_type("like", '{"bundle":"object"}', clock.now_us()))
    write(store, lambda tx: tx.settings.save_type("comment", '{"v":1}', clock.now_us()))
    write(store, lambda tx: tx.settings.save_type("comment", '{"v":2}', clock.now_us()))
    assert sorted(read(store, lambda tx: tx.settings.load_types())) == [
        ("comment", '{"v":2}'), ("like", '{"bundle":"object"}')]


def test_preferences_are_replaced_whole(store: ports.Store, clock: FrozenClock) -> None:
    assert read(store, lambda tx: tx.settings.preferences("ann")) is None
    first = {"email": {"address": "ann@example.org", "frequency": "daily"}, "locale": "de"}
    write(store, lambda tx: tx.settings.save_preferences("ann", first, clock.now_us()))
    assert read(store, lambda tx: tx.settings.preferences("ann")) == first
    write(store, lambda tx: tx.settings.save_preferences("ann", {"locale": "fr"},
                                                         clock.now_us()))
    assert read(store, lambda tx: tx.settings.preferences("ann")) == {"locale": "fr"}


def test_a_readers_changes_do_not_reach_the_store(store: ports.Store, clock: FrozenClock) -> None:
    prefs = {"channels": {"social": {"email": False}}}
    write(store, lambda tx: tx.settings.save_preferences("ann", prefs, clock.now_us()))
    prefs["channels"]["social"]["email"] = True
    found = read(store, lambda tx: tx.settings.preferences("ann"))
    assert found == {"channels": {"social": {"email": False}}}
    found["channels"] = {}
    assert read(store, lambda tx: tx.settings.preferences("ann")) == {
        "channels": {"social": {"email": False}}}


def test_preferences_of_many_users_name_only_those_with_some(store: ports.Store,
                                                             clock: FrozenClock) -> None:
    write(store, lambda tx: tx.settings.save_preferences("ann", {"a": 1}, clock.now_us()))
    write(store, lambda tx: tx.settings.save_preferences("cat", {}, clock.now_us()))
    assert read(store, lambda tx: tx.settings.preferences_many(["ann", "bob", "cat"])) == {
        "ann": {"a": 1}, "cat": {}}
    assert read(store, lambda tx: tx.settings.preferences_many([])) == {}


def test_bounces_are_kept_lower_cased(store: ports.Store, clock: FrozenClock) -> None:
    write(store, lambda tx: tx.settings.report_bounce("Ann@Example.ORG", "550 no such user",
                                                      clock.now_us()))
    write(store, lambda tx: tx.settings.report_bounce("bob@example.org", "full",
                                                      clock.now_us()))
    write(store, lambda tx: tx.settings.report_bounce("BOB@example.org", "again",
                                                      clock.now_us()))
    assert read(store, lambda tx: tx.settings.bounced(
        ["ann@example.org", "BOB@EXAMPLE.ORG", "cat@example.org"])) == {
        "ann@example.org", "bob@example.org"}
    assert read(store, lambda tx: tx.settings.bounced([])) == set()
    assert write(store, lambda tx: tx.settings.clear_bounce("ANN@example.org")) is True
    assert write(store, lambda tx: tx.settings.clear_bounce("ann@example.org")) is False
    assert read(store, lambda tx: tx.settings.bounced(["ann@example.org"])) == set()
