"""tidings' own strings in several languages, with gettext plural forms (catalogs read by Babel).

The catalogs are the ``.po`` files under ``tidings/locale``; they are compiled in memory on first
use, so no build step is needed. Unknown locales fall back to English (the msgids).
"""

from __future__ import annotations

import gettext
import io
import re
from functools import lru_cache
from importlib import resources

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

DEFAULT_LOCALE = "en"
_LOCALE = re.compile(r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?$")


def available_locales() -> list[str]:
    folder = resources.files("tidings") / "locale"
    return sorted([DEFAULT_LOCALE, *(p.name for p in folder.iterdir() if p.is_dir())])


def normalise_locale(locale: str | None) -> str:
    """'de-DE' -> 'de' when only 'de' is shipped; anything unknown -> 'en'."""
    if not locale or not _LOCALE.match(locale):
        return DEFAULT_LOCALE
    known = available_locales()
    candidate = locale.replace("-", "_")
    if candidate in known:
        return candidate
    language = candidate.split("_")[0].lower()
    return language if language in known else DEFAULT_LOCALE


@lru_cache(maxsize=16)
def translations(locale: str) -> gettext.NullTranslations:
    """The gettext translations for a (normalised) locale."""
    if locale == DEFAULT_LOCALE:
        return gettext.NullTranslations()
    source = resources.files("tidings") / "locale" / locale / "LC_MESSAGES" / "tidings.po"
    with source.open("rb") as handle:
        catalog = read_po(handle, locale=locale)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)
