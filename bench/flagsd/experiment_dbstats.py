#!/usr/bin/env python3
"""What flagsd keeps for experiments: rows and bytes (tables with their indexes) of metric_total, experiment_unit,
experiment_pre and experiment_arm, from a SQLite events file (flags-events.sqlite, with dbstat, as dbstats.py) or a
PostgreSQL database (pg_total_relation_size, through psql), how many of their rows each metric has, and the bytes of every other table (event ids, windows, counters: what the same
events leave beside them).

    experiment_dbstats.py flags-events.sqlite
    experiment_dbstats.py postgres://USER:PASSWORD@HOST:PORT/DATABASE

Prints one JSON object. Reads while flagsd runs (SQLite read-only).
"""
import argparse
import json
import os
import sqlite3
import subprocess

TABLES = ["metric_total", "experiment_unit", "experiment_pre", "experiment_arm"]


def sqlite_stats(path):
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    owner = dict(connection.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')"))
    sizes = {}
    for name, size in connection.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
        table = owner.get(name, name)
        sizes[table] = sizes.get(table, 0) + size
    rows = {table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES}
    by_metric = dict(connection.execute("SELECT metric, count(*) FROM metric_total GROUP BY metric"))
    pre_by_metric = dict(connection.execute("SELECT metric, count(*) FROM experiment_pre GROUP BY metric"))
    wal = path + "-wal"
    others = {name: size for name, size in sizes.items() if name not in TABLES}
    return {"backend": "sqlite", "file_bytes": os.path.getsize(path), "other_tables": others,
            "wal_bytes": os.path.getsize(wal) if os.path.exists(wal) else 0, "all_bytes": sum(sizes.values()),
            "tables": {table: {"rows": rows[table], "bytes": sizes.get(table, 0)} for table in TABLES},
            "metric_total_by_metric": by_metric, "experiment_pre_by_metric": pre_by_metric}


def psql(url, sql):
    out = subprocess.run(["psql", url, "-X", "-A", "-t", "-F", "\t", "-c", sql], check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def postgres_stats(url):
    # VACUUM ANALYZE first would change what is measured (the free space of updated rows is part of the cost); the
    # row counts are exact counts.
    tables = {}
    for table in TABLES:
        (rows, total, heap), = psql(url, f"SELECT (SELECT count(*) FROM {table}), pg_total_relation_size('{table}'), "
                                         f"pg_relation_size('{table}')")
        tables[table] = {"rows": int(rows), "bytes": int(total), "heap_bytes": int(heap)}
    (database,), = psql(url, "SELECT pg_database_size(current_database())")
    by_metric = {m: int(c) for m, c in psql(url, "SELECT metric, count(*) FROM metric_total GROUP BY metric")}
    pre_by_metric = {m: int(c) for m, c in psql(url, "SELECT metric, count(*) FROM experiment_pre GROUP BY metric")}
    others = {name: int(size) for name, size in psql(
        url, "SELECT tablename, pg_total_relation_size(quote_ident(tablename)) FROM pg_tables WHERE schemaname = 'public'")
        if name not in TABLES}
    return {"backend": "postgres", "database_bytes": int(database), "tables": tables, "other_tables": others,
            "metric_total_by_metric": by_metric, "experiment_pre_by_metric": pre_by_metric}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("database")
    args = parser.parse_args()
    if args.database.startswith(("postgres://", "postgresql://")):
        result = postgres_stats(args.database)
    else:
        result = sqlite_stats(args.database)
    for row in result["tables"].values():
        row["bytes_per_row"] = round(row["bytes"] / row["rows"], 1) if row["rows"] else None
    print(json.dumps(result))


if __name__ == "__main__":
    main()
