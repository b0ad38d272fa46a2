"""The PostgreSQL timeline statement's parameters as the server reads them, and its rows as
Python reads them."""

from __future__ import annotations

import json

from sqlalchemy import create_engine, text

from stores import PostgresStores
from tidings.store.sql.core.database import normalise_url
from tidings.store.sql.timeline.reads import _object, array_text


def test_the_types_text_is_read_back_as_the_same_array(
        postgresql_stores: PostgresStores) -> None:
    """Type names are plain (``TYPE_NAME``), but the text quotes whatever it is given."""
    engine = create_engine(normalise_url(postgresql_stores.server))
    try:
        with engine.connect() as conn:
            for names in [("post",), ("a.b", "c:d-e_f"),
                          ('x"y', "b\\s", "{,}", " sp ", "NULL", ""), ()]:
                back = conn.execute(text("SELECT CAST(:t AS VARCHAR[])"),
                                    {"t": array_text(names)}).scalar_one()
                assert tuple(back) == names
    finally:
        engine.dispose()


def test_a_payload_is_read_as_json_loads_reads_it() -> None:
    """The scanner's shortcut gives ``json.loads``' result, or its error, for any text."""
    for text_ in ['{"text": "hi"}', '{}', '[1, 2]', '"s"', '3', ' {"a": 1}', '{"a": 1} ',
                  '{"a": 1}\n', '{"a": 1}{', '{"a": 1} x', '', ' ', '{"a"', 'nul', 'NaN',
                  '{"a": "\\u00e9\\n"}', '{"a": {"b": [null, true, 1.5e3]}}']:
        try:
            want: object = json.loads(text_)
        except ValueError as exc:
            want = type(exc)
        try:
            got: object = _object(text_)
        except ValueError as exc:
            got = type(exc)
        assert repr(got) == repr(want), text_  # repr: NaN is not equal to itself
