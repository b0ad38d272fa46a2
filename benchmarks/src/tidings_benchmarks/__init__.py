"""The benchmarks of tidings, a package of their own (the repository's ``benchmarks/``) that
``tidings bench`` loads when it is installed: `tidings bench timelines` (W1), `tidings bench
inbox` (W2), `tidings bench fanout` (W3), `tidings bench http` (W4).

Each workload module sets up a throwaway store (:mod:`tidings_benchmarks.stores`), loads data,
times the operations through the public :class:`~tidings.engine.Tidings` API (or real ``tidings
worker`` processes) and returns a plain dict that :mod:`tidings_benchmarks.report` prints as a
table and writes as JSON. Figures are medians over rounds, with p50/p90/p99 latencies for
per-request figures. They are never asserted in tests: the machines are shared and noisy.
"""

from __future__ import annotations

# `tidings bench --help`, shown without importing the workloads
HELP = ("Benchmarks, each a table on stdout (JSON with --json): timelines is W1 (the timelines "
        "seed: push, pull and hybrid beside the seed's SQL), inbox is W2 (unread counts, "
        "bundled first pages, mark all read in-process), fanout is W3 (one event to many "
        "followers through worker processes), http is W4 (the W2 reads and POST /v1/events "
        "through `tidings serve`).")


class BenchFailure(Exception):
    """The engine under test gave a wrong result (a notification lost or doubled, a job stuck).

    Not a :class:`~tidings.exceptions.TidingsError`: no user input causes it, and the bench
    command reports it and exits non-zero rather than print a figure for a wrong answer.
    """
