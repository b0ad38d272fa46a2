"""W1's figures: tidings per model and graph, the seed's SQL beside them (``--baseline``), the
seed article's own figures, storage, and the Rich tables that print them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from tidings_benchmarks.compare import Side, comparison, fmt_ratio, ratio
from tidings_benchmarks.measure import Latencies, median
from tidings_benchmarks.report import fmt_ms, fmt_rate

# The seed article's figures (MySQL 5.1, 2008; ../shared/BENCH.md W1), by (model, figure).
ARTICLE = {("push", "submit"): 560.0, ("push", "first page"): 1300.0,
           ("pull", "submit"): 6700.0, ("pull", "first page"): 120.0}
ARTICLE_BYTES = {"push": 2.0e9, "pull": 130e6}
# Goals as ratios to the seed's SQL in the same run (issue 10, ../shared/BENCH.md W1).
GOALS = {("push", "submit"): 1.25, ("pull", "first page"): 1.35}
# On the Redis hot store, against raw_redis.py: within 80 % of its Lua fan-out and of its id
# page (issue 11, ../shared/BENCH.md "Redis")
REDIS_GOALS = {("push", "submit"): 0.8, ("push", "first page"): 0.8,
               ("push", "later page"): 0.8}
STORAGE_GOAL = {"push": 0.5}  # at most this share of the seed's mailbox + message bytes
UNITS = {"submit": "messages/s", "first page": "pages/s", "later page": "pages/s"}
FIGURES = ("submit", "first page", "later page")
MB = 1_000_000


def figure_name(model: str, figure: str) -> str:
    return f"{model}: {figure}"


def _side(phases: Sequence[Any], figure: str) -> Side:
    return Side.of(phases, per_request=figure != "submit")


def summarise(measured: list[dict[str, Any]], seed_sql: dict[str, tuple[str, str]],
              baseline: bool, raw_sql: dict[str, tuple[str, str]] | None = None,
              goals: dict[tuple[str, str], float] | None = None,
              storage_goals: dict[str, float] | None = None) -> dict[str, Any]:
    """``results`` (tidings), ``comparisons`` (with ``--baseline``; ``raw_comparisons``: the
    raw limit's, on PostgreSQL), ``storage`` and ``models`` (rates by graph, figure and
    model, for the plot) of the measured models."""
    results, comparisons, raw_comparisons, storage, floors = [], [], [], [], []
    goals = GOALS if goals is None else goals
    storage_goals = STORAGE_GOAL if storage_goals is None else storage_goals
    models: dict[str, dict[str, dict[str, float]]] = {}
    for m in measured:
        model, graph, phases = m["model"], m["graph"], m["phases"]
        seed_model = "pull" if model == "pull" else "push"
        for figure in FIGURES:
            ours = phases.tidings[figure]
            rate = median([p.per_second for p in ours])
            models.setdefault(graph, {}).setdefault(figure, {})[model] = round(rate, 1)
            latency = (Latencies(tuple(x for p in ours for x in p.latencies)).to_dict()
                       if figure != "submit" else None)
            article = ARTICLE.get((model, figure))
            results.append({"figure": f"{figure_name(model, figure)} ({graph})", "model": model,
                            "graph": graph, "unit": UNITS[figure], "per_second": round(rate, 1),
                            "per_second_rounds": [round(p.per_second, 1) for p in ours],
                            "latency": latency, "article": article})
            if baseline:
                statement, anchor = seed_sql[figure_name(seed_model, figure)]
                comparisons.append(comparison(
                    f"{figure_name(model, figure)} ({graph})", UNITS[figure],
                    _side(ours, figure), _side(phases.baseline[figure], figure),
                    statement=statement, anchor=anchor, goal=goals.get((model, figure)),
                    model=model, graph=graph, article=article))
            if raw_sql is not None and phases.raw[figure]:
                statement, anchor = raw_sql[figure_name(seed_model, figure)]
                raw_comparisons.append(comparison(
                    f"{figure_name(model, figure)} ({graph})", UNITS[figure],
                    _side(ours, figure), _side(phases.raw[figure], figure),
                    statement=statement, anchor=anchor, model=model, graph=graph))
        if phases.floor["submit"] and phases.baseline["submit"]:
            floors.append(floor_entry(model, graph, phases))
        sizes, seed_sizes = m["storage"], m["seed_storage"]
        ours_bytes = sizes.get("timelines", 0) + sizes.get("events", 0)
        row: dict[str, Any] = {
            "model": model, "graph": graph, "mailbox_rows": m["mailbox_rows"],
            "timelines_bytes": sizes.get("timelines", 0), "events_bytes": sizes.get("events", 0),
            "timelines_and_events_bytes": ours_bytes, "total_bytes": sum(sizes.values()),
            "tables": sizes, "article_bytes": ARTICLE_BYTES.get(model),
            "goal_ratio": storage_goals.get(model)}
        if seed_sizes is not None:
            if "message" in seed_sizes:  # SQL: the seed's mailbox (push) and message tables
                theirs = seed_sizes["message"] + (
                    seed_sizes.get("mailbox", 0) if seed_model == "push" else 0)
                mine = ours_bytes
            else:  # Redis: raw_redis.py's mailboxes, against tidings' alone
                theirs, mine = seed_sizes.get("mailbox", 0), row["timelines_bytes"]
            row.update({"seed_tables": seed_sizes, "seed_bytes": theirs,
                        "seed_total_bytes": theirs + seed_sizes.get("follower", 0),
                        "ratio": round(mine / theirs, 4) if theirs else None})
        storage.append(row)
    out: dict[str, Any] = {"results": results, "storage": storage, "models": models}
    if baseline:
        out["comparisons"] = comparisons
    if raw_comparisons:
        out["raw_comparisons"] = raw_comparisons
    if floors:
        out["floor_comparisons"] = floors
    return out


def floor_entry(model: str, graph: str, phases: Any) -> dict[str, Any]:
    """Push submit beside its SQL floor: tidings, the floor with the cap and without, the
    seed's SQL, each side's rate and its ratio to the seed's."""
    seed = _side(phases.baseline["submit"], "submit")
    entry: dict[str, Any] = {"figure": f"{figure_name(model, 'submit')} ({graph})",
                             "model": model, "graph": graph, "unit": UNITS["submit"],
                             "goal_ratio": GOALS.get((model, "submit")),
                             "seed": seed.to_dict()}
    for name, timed in (("tidings", phases.tidings["submit"]), ("floor", phases.floor["submit"]),
                        ("floor_uncapped", phases.floor_uncapped["submit"])):
        if timed:
            side = _side(timed, "submit")
            entry[name] = {**side.to_dict(), "ratio": ratio(side.per_second, seed.per_second)}
    return entry


def _lat(side: dict[str, Any] | None, key: str) -> str:
    return fmt_ms(side[key]) if side else "—"


def tables(result: dict[str, Any]) -> list[Table]:
    """One table per graph (figures of every model) and one of storage."""
    out: list[Table] = []
    rows = result.get("comparisons") or result["results"]
    for info in result["data"]:
        graph = info["graph"]
        title = (f"W1 timelines — {result['store']}, {graph} graph: {info['users']:,} users, "
                 f"{info['messages']:,} messages, {info['followees_per_user']} followees a user "
                 f"(most followed: {info['max_followers']:,}; over "
                 f"{info['celebrity_followers']:,}: {info['celebrities']}); median of "
                 f"{result['settings']['rounds']} rounds; submit: "
                 f"{result['settings'].get('submit_batch', 1)} messages per publish_many")
        table = Table(title=title, title_justify="left")
        table.add_column("figure")
        compared = "comparisons" in result
        label = result.get("baseline_label", "seed SQL")
        columns = (["tidings", label, "ratio", "goal"] if compared else ["tidings"])
        for column in [*columns, "article (2008)", "p50 ms", "p90 ms", "p99 ms"]:
            table.add_column(column, justify="right")
        for row in rows:
            if row["graph"] != graph:
                continue
            article = fmt_rate(row["article"]) if row.get("article") else "—"
            if compared:
                t, b = row["tidings"], row["baseline"]
                goal = row.get("goal_ratio")
                cells = [fmt_rate(t["per_second"]), fmt_rate(b["per_second"]),
                         fmt_ratio(row["ratio"]), f"≥ {goal:g}x" if goal else ""]
                lats = [f"{_lat(t['latency'], k)} / {_lat(b['latency'], k)}"
                        if t["latency"] else "—" for k in ("p50_ms", "p90_ms", "p99_ms")]
            else:
                cells = [fmt_rate(row["per_second"])]
                lats = [_lat(row["latency"], k) for k in ("p50_ms", "p90_ms", "p99_ms")]
            table.add_row(f"{row['figure'].rsplit(' (', 1)[0]} ({row['unit']})", *cells,
                          article, *lats)
        out.append(table)
        if result.get("raw_comparisons"):
            out.append(raw_table(result, graph))
        if any(row["graph"] == graph for row in result.get("floor_comparisons", [])):
            out.append(floor_table(result, graph))
    out.append(storage_table(result))
    return out


def raw_table(result: dict[str, Any], graph: str) -> Table:
    """The raw limit's figures of ``graph`` (PostgreSQL: ``raw_postgresql.py``'s statements
    where they differ from the seed's), measured in the same rounds."""
    table = Table(title=f"W1 timelines, {graph} graph: beside the raw limit "
                        "(raw_postgresql.py's statements, the same rounds)",
                  title_justify="left")
    for column in ["figure", "tidings", "raw limit", "ratio", "p50 ms", "p99 ms"]:
        table.add_column(column, justify="left" if column == "figure" else "right")
    for row in result["raw_comparisons"]:
        if row["graph"] != graph:
            continue
        t, b = row["tidings"], row["baseline"]
        lats = [f"{_lat(t['latency'], k)} / {_lat(b['latency'], k)}" if t["latency"] else "—"
                for k in ("p50_ms", "p99_ms")]
        table.add_row(f"{row['figure'].rsplit(' (', 1)[0]} ({row['unit']})",
                      fmt_rate(t["per_second"]), fmt_rate(b["per_second"]),
                      fmt_ratio(row["ratio"]), *lats)
    return table


def floor_table(result: dict[str, Any], graph: str) -> Table:
    """Push submit of ``graph`` beside its SQL floor (:mod:`tidings_benchmarks.timeline_floor`)."""
    table = Table(title=f"W1 push submit, {graph} graph: beside its SQL floor (tidings' own "
                        "statements per block — publish with the jobs, claim, push with the "
                        "cap, jobs deleted — with nothing run between them; the same rounds)",
                  title_justify="left")
    for column in ["side", "messages/s", "ratio to the seed's SQL", "goal"]:
        table.add_column(column, justify="left" if column == "side" else "right")
    for row in result["floor_comparisons"]:
        if row["graph"] != graph:
            continue
        goal = row.get("goal_ratio")
        for key, label in (("tidings", "tidings"), ("floor", "SQL floor, cap held"),
                           ("floor_uncapped", "SQL floor, no cap")):
            if key in row:
                table.add_row(label, fmt_rate(row[key]["per_second"]),
                              fmt_ratio(row[key]["ratio"]),
                              f"≥ {goal:g}x" if goal and key == "tidings" else "")
        table.add_row("the seed's SQL", fmt_rate(row["seed"]["per_second"]), "1.00x", "")
    return table


def storage_table(result: dict[str, Any]) -> Table:
    compared = "comparisons" in result
    table = Table(title="W1 storage (MB, tables with their indexes; the seed: its mailbox + "
                        "message tables, uncapped)", title_justify="left")
    for column in ["model (graph)", "mailbox rows", "timelines", "events",
                   "timelines + events", "all tidings tables",
                   *([result.get("baseline_label", "seed SQL"), "ratio", "goal"] if compared
                     else []), "article (2008)"]:
        table.add_column(column, justify="left" if column.startswith("model") else "right")
    for row in result["storage"]:
        article = row.get("article_bytes")
        extra = []
        if compared:
            goal = row.get("goal_ratio")
            extra = [f"{row.get('seed_bytes', 0) / MB:,.1f}", fmt_ratio(row.get("ratio")),
                     f"≤ {goal:g}x" if goal else ""]
        table.add_row(f"{row['model']} ({row['graph']})", f"{row['mailbox_rows']:,}",
                      f"{row['timelines_bytes'] / MB:,.1f}", f"{row['events_bytes'] / MB:,.1f}",
                      f"{row['timelines_and_events_bytes'] / MB:,.1f}",
                      f"{row['total_bytes'] / MB:,.1f}", *extra,
                      f"{article / MB:,.0f}" if article else "—")
    return table
