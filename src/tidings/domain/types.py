"""Event types declared as data: category, section, priority, bundling, audience, templates."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from jinja2 import TemplateSyntaxError

from tidings.domain import fields as query_fields
from tidings.domain.privacy import parse_privacy
from tidings.domain.sandbox import SOURCE_LIMIT, compile_template
from tidings.exceptions import ConfigError, InvalidEventType, UnknownEventType

SECTIONS = ("alert", "message")
BUNDLE_RULES = ("none", "object", "actor", "actor_object")
AUDIENCE_RULES = ("recipients", "object_subscribers", "actor_followers")
CHANNELS = ("web", "email", "webhook", "push")
TYPE_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")  # whole string: fullmatch
LABEL_LIMIT = 80
DESCRIPTION_LIMIT = 200
ONE_LINE = re.compile(r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # no control, no line break
# the title a type gets when it declares none; rendered as the built-in, localised default
# title ("alice did mention", "Carol and 1 other did page-linked on San Francisco")
DEFAULT_TITLE = "{{ actor }} did {{ type }} on {{ object }}"


def _shown(name: Any) -> str:
    """A key for an error message or field: as given when it is plain text, else escaped."""
    return name if isinstance(name, str) and name.isprintable() and _encodes(name) else ascii(name)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class Templates:
    """Title templates for one notification and for a bundle of several, plus optional bodies.

    Templates are Jinja2 text; the names they may use are documented in ``docs/types.md``.
    """

    title: str = DEFAULT_TITLE
    bundled_title: str | None = None
    body: str | None = None
    html: str | None = None
    email_body: str | None = None
    link: str | None = None
    locales: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def localised(self, locale: str) -> Templates:
        """These templates in ``locale``: its own fields where given, else the default ones."""
        own = self.locales.get(locale) or self.locales.get(locale.split("_")[0])
        return replace(self, locales={}, **own) if own else self

    @classmethod
    def from_dict(cls, type_name: str, data: Mapping[str, Any]) -> Templates:
        """Build from TOML/JSON: the fields, plus one sub-table per locale (``[….templates.de]``
        or ``locales = {de = {…}}``) with the fields that differ in that language."""
        values = {}
        locales: dict[str, dict[str, str]] = {}
        for key, value in data.items():
            if key == "locales" and isinstance(value, Mapping):
                for code, table in value.items():
                    locales[code] = cls._fields(type_name, table,
                                                f"templates.locales.{_shown(code)}")
            elif isinstance(key, str) and LOCALE.fullmatch(key) and isinstance(value, Mapping):
                locales[key] = cls._fields(type_name, value, f"templates.{key}")
            else:
                values.update(cls._fields(type_name, {key: value}, "templates"))
        return cls(**values, locales=locales)

    def check(self, type_name: str) -> None:
        """Every template is text that compiles in the sandbox; every locale is a locale.

        Raises :class:`InvalidEventType` naming the field (``templates.title``,
        ``templates.de.body``), so a bad template is refused when the type is declared rather
        than failing on every read.
        """
        tables: list[tuple[str, Mapping[str, Any]]] = [("templates", {
            key: getattr(self, key) for key in TEMPLATE_FIELDS})]
        for code, table in self.locales.items():
            if not isinstance(code, str) or not LOCALE.fullmatch(code):
                raise InvalidEventType(f"event type {type_name!r}: {_shown(code)!r} is not a "
                                       "locale like 'de' or 'pt_BR'",
                                       field=f"templates.{_shown(code)}")
            if not isinstance(table, Mapping):
                raise InvalidEventType(f"event type {type_name!r}: templates.{code} must be a "
                                       "table", field=f"templates.{code}")
            tables.append((f"templates.{code}", table))
        for where, table in tables:
            for key, source in table.items():
                name = f"{where}.{_shown(key)}"
                if key not in TEMPLATE_FIELDS:
                    raise InvalidEventType(f"event type {type_name!r}: unknown template "
                                           f"{_shown(key)!r}", field=name)
                if source is not None:
                    _check_template(type_name, name, source, html=key == "html")

    @staticmethod
    def _fields(type_name: str, table: Any, where: str) -> dict[str, str]:
        if not isinstance(table, Mapping):
            raise InvalidEventType(f"event type {type_name!r}: {where} must be a table",
                                   field=where)
        result = {}
        for key, value in table.items():
            if key not in TEMPLATE_FIELDS:
                raise InvalidEventType(
                    f"event type {type_name!r}: unknown template {_shown(key)!r}",
                    field=f"{where}.{_shown(key)}")
            if value is None:
                continue
            if not isinstance(value, str):
                raise InvalidEventType(
                    f"event type {type_name!r}: template {key!r} must be a string",
                    field=f"{where}.{key}")
            result[key] = value
        return result


TEMPLATE_FIELDS = ("title", "bundled_title", "body", "html", "email_body", "link")
LOCALE = re.compile(r"[a-z]{2,3}(_[A-Z]{2})?")  # whole string: fullmatch


def _check_template(type_name: str, name: str, source: Any, *, html: bool) -> None:
    def bad(message: str) -> InvalidEventType:
        return InvalidEventType(f"event type {type_name!r}: {name} {message}", field=name)

    if not isinstance(source, str):
        raise bad("must be a string")
    if not _encodes(source):
        raise bad("is not valid Unicode text (it holds a lone surrogate)")
    if "\x00" in source:
        raise bad("holds a NUL character (U+0000), which cannot be stored")
    if len(source) > SOURCE_LIMIT:
        raise bad(f"is longer than {SOURCE_LIMIT} characters")
    try:
        compile_template(source, html, "en")
    except TemplateSyntaxError as exc:
        raise bad(f"does not compile: {exc.message} (line {exc.lineno})") from None
    except Exception as exc:  # e.g. nesting too deep for the compiler
        raise bad(f"does not compile: {type(exc).__name__}") from None


MAX_EMAIL_DELAY = 7 * 86_400  # a week


@dataclass(frozen=True)
class EventType:
    """One kind of event and how its notifications behave."""

    name: str
    category: str = "general"
    section: str = "alert"
    priority: int = 5
    bundle: str = "none"
    channels: tuple[str, ...] = ("web",)
    audience: tuple[str, ...] = ("recipients", "object_subscribers")
    templates: Templates = field(default_factory=Templates)
    retention_days: int | None = None
    mandatory: bool = False
    # how people see the type (filters, preferences): a short label and a one-line description
    label: str | None = None
    description: str | None = None
    privacy: str | None = None  # "followers", "group:NAME" or "rule:NAME" (domain/privacy.py)
    # top-level scalar payload fields a list or count may be narrowed by (domain/fields.py)
    queryable: tuple[str, ...] = ()
    # mail N seconds after delivery; with email_unless_read only if still unread then
    email_delay_seconds: int = 0
    email_unless_read: bool = False
    # push N seconds after delivery, and only if still unread then (as every push)
    push_delay_seconds: int = 0
    # the top-level payload key listing the users the event mentions: a recipient listed
    # there is notified for the reason "mention" (tidings.domain.flags)
    mentions: str | None = None

    def __post_init__(self) -> None:
        def bad(message: str, name: str) -> InvalidEventType:
            return InvalidEventType(f"event type {self.name!r}: {message}", field=name)

        if not isinstance(self.name, str) or not TYPE_NAME.fullmatch(self.name):
            raise InvalidEventType(
                "event type name must be 1-64 characters of [A-Za-z0-9_.:-]", field="name"
            )
        if self.name == "*":
            raise bad("'*' is reserved for wildcard subscriptions", "name")
        if not isinstance(self.category, str) or not TYPE_NAME.fullmatch(self.category):
            raise bad("category must be 1-64 characters of [A-Za-z0-9_.:-]", "category")
        if self.section not in SECTIONS:
            raise bad(f"section must be one of {', '.join(SECTIONS)}", "section")
        if not isinstance(self.priority, int) or not 1 <= self.priority <= 10:
            raise bad("priority must be an integer from 1 (highest) to 10", "priority")
        if self.bundle not in BUNDLE_RULES:
            raise bad(f"bundle must be one of {', '.join(BUNDLE_RULES)}", "bundle")
        for channel in self.channels:
            if channel not in CHANNELS:
                raise bad(f"unknown channel {channel!r}; use {', '.join(CHANNELS)}", "channels")
        if not self.audience:
            raise bad("audience must name at least one rule", "audience")
        for rule in self.audience:
            if rule not in AUDIENCE_RULES:
                raise bad(
                    f"unknown audience rule {rule!r}; use {', '.join(AUDIENCE_RULES)}", "audience"
                )
        if self.retention_days is not None and (
            not isinstance(self.retention_days, int) or isinstance(self.retention_days, bool)
            or self.retention_days < 1
        ):
            raise bad("retention_days must be a positive integer", "retention_days")
        if self.privacy is not None:
            try:
                parse_privacy(self.privacy)
            except ValueError as exc:
                raise bad(str(exc), "privacy") from None
        for delay in ("email_delay_seconds", "push_delay_seconds"):
            seconds = getattr(self, delay)
            if (not isinstance(seconds, int) or isinstance(seconds, bool)
                    or not 0 <= seconds <= MAX_EMAIL_DELAY):
                raise bad(f"{delay} must be an integer from 0 to {MAX_EMAIL_DELAY}", delay)
        if not isinstance(self.email_unless_read, bool):
            raise bad("email_unless_read must be true or false", "email_unless_read")
        why = query_fields.check_names(self.queryable)
        if why is not None:
            raise bad(why, "queryable")
        if self.mentions is not None and (
                not isinstance(self.mentions, str)
                or query_fields.check_names((self.mentions,)) is not None):
            raise bad("mentions must name one top-level payload key (1-64 characters of "
                      "[A-Za-z0-9_-])", "mentions")
        for key, limit in (("label", LABEL_LIMIT), ("description", DESCRIPTION_LIMIT)):
            text = getattr(self, key)
            if text is not None and (not isinstance(text, str) or not 1 <= len(text) <= limit
                                     or not ONE_LINE.fullmatch(text) or not _encodes(text)):
                raise bad(f"{key} must be one line of 1-{limit} characters", key)
        if not isinstance(self.templates, Templates):
            raise bad("templates must be Templates", "templates")
        self.templates.check(self.name)
        try:  # what is stored must read back: JSON in UTF-8, unchanged
            data = self.to_dict()
            text = json.dumps(data, ensure_ascii=False, allow_nan=False)
            same = json.loads(text.encode("utf-8")) == data
        except (TypeError, ValueError) as exc:
            raise bad(f"cannot be stored as JSON ({type(exc).__name__})", "type") from None
        if not same:
            raise bad("does not read back unchanged from JSON", "type")

    @property
    def display_label(self) -> str:
        """The label, or the name made readable: "edit-user-talk" → "Edit user talk"."""
        return self.label or humanise(self.name)

    @cached_property
    def fingerprint(self) -> str:
        """A hash of the whole definition: a redeclared type gets a new one."""
        text = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["channels"] = list(self.channels)
        data["audience"] = list(self.audience)
        if self.privacy is None:  # as stored before types had privacy rules
            del data["privacy"]
        if self.queryable:
            data["queryable"] = list(self.queryable)
        else:  # as stored before types had queryable fields
            del data["queryable"]
        for key in ("email_delay_seconds", "email_unless_read", "push_delay_seconds"):
            if not data[key]:  # as stored before types had delayed mail and pushes
                del data[key]
        if self.mentions is None:  # as stored before types named their mentions
            del data["mentions"]
        return data

    def query_fields(self, payload: Mapping[str, Any]) -> query_fields.Fields:
        """The queryable fields of ``payload`` as every store keeps them."""
        return query_fields.extract(self.queryable, payload) if self.queryable else ()

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> EventType:
        """Build a type from TOML/JSON data, naming the bad key in the error."""
        known = {
            "category", "section", "priority", "bundle", "channels", "audience",
            "templates", "retention_days", "mandatory", "name", "label", "description",
            "privacy", "queryable", "email_delay_seconds", "email_unless_read",
            "push_delay_seconds", "mentions",
        }
        for key in data:
            if key not in known:
                raise InvalidEventType(f"event type {name!r}: unknown key {_shown(key)!r}",
                                       field=_shown(key))
        templates_data = data.get("templates", {})
        if not isinstance(templates_data, Mapping):
            raise InvalidEventType(
                f"event type {name!r}: templates must be a table", field="templates"
            )
        templates = Templates.from_dict(name, templates_data)
        kwargs: dict[str, Any] = {k: v for k, v in data.items() if k not in {"templates", "name"}}
        for key in ("channels", "audience", "queryable"):
            if key in kwargs:
                value = kwargs[key]
                if not isinstance(value, list | tuple) or not all(
                        isinstance(v, str) for v in value):
                    raise InvalidEventType(
                        f"event type {name!r}: {key} must be a list of strings", field=key
                    )
                kwargs[key] = tuple(dict.fromkeys(value) if key == "queryable" else value)
        for key in ("category", "section", "bundle", "mentions"):
            if key in kwargs and not isinstance(kwargs[key], str) and (
                    key != "mentions" or kwargs[key] is not None):
                raise InvalidEventType(f"event type {name!r}: {key} must be a string", field=key)
        if "mandatory" in kwargs and not isinstance(kwargs["mandatory"], bool):
            raise InvalidEventType(f"event type {name!r}: mandatory must be true or false",
                                   field="mandatory")
        if "priority" in kwargs and isinstance(kwargs["priority"], bool):
            raise InvalidEventType(f"event type {name!r}: priority must be an integer",
                                   field="priority")
        return cls(name=name, templates=templates, **kwargs)


def humanise(name: str) -> str:
    """A type or category name as words: separators become spaces, the first letter capital."""
    words = re.sub(r"[-_.:]+", " ", name).strip() or name
    return words[:1].upper() + words[1:]


class TypeRegistry:
    """The declared event types, by name."""

    def __init__(self, types: Iterable[EventType] = ()) -> None:
        self._types: dict[str, EventType] = {}
        for event_type in types:
            self.add(event_type)

    def add(self, event_type: EventType) -> None:
        self._types[event_type.name] = event_type

    def get(self, name: str) -> EventType:
        try:
            return self._types[name]
        except KeyError:
            raise UnknownEventType(
                f"unknown event type {name!r}; declare it first (known: "
                f"{', '.join(sorted(self._types)) or 'none'})",
                field="type",
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Any:
        return iter(sorted(self._types.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        return len(self._types)


def load_types_file(path: str | Path) -> list[EventType]:
    """Read event types from a TOML file: one ``[types.NAME]`` table each."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"TIDINGS_TYPES_FILE: {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"TIDINGS_TYPES_FILE: {path} is not valid TOML: {exc}") from None
    tables = data.get("types")
    if not isinstance(tables, dict):
        raise ConfigError(f"TIDINGS_TYPES_FILE: {path} has no [types.NAME] tables")
    result = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(f"TIDINGS_TYPES_FILE: [types.{name}] must be a table")
        try:
            result.append(EventType.from_dict(name, table))
        except InvalidEventType as exc:
            raise ConfigError(f"TIDINGS_TYPES_FILE: {path}: {exc}") from None
    return result
