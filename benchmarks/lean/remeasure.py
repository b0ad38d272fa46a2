"""Print the sizes of a database already filled (measure_now.py's second half)."""
from __future__ import annotations

import sys

import measure_now
import psycopg
from sizes import pg_sizes, report

url = sys.argv[1]
with psycopg.connect(url, autocommit=True) as conn:
    rows = conn.execute("SELECT count(*) FROM notifications").fetchone()[0]
    report("today's layout on postgresql", pg_sizes(conn), rows, measure_now.INBOX)
