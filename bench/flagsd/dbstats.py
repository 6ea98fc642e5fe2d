#!/usr/bin/env python3
"""What flagsd's SQLite events file (flags-events.sqlite) holds for client events: rows and bytes (tables with their indexes, from dbstat) of
event_id, event_count, event_window and event_crash, the file and its write-ahead log, and, with --range, the
counters of one namespace in a time range and how many of them are still per minute (not on an hour's start).

    dbstats.py flags-events.sqlite [--namespace storage --range FROM_MS UNTIL_MS]

Prints one JSON object. Reads the file read-only while flagsd runs.
"""
import argparse
import json
import os
import sqlite3

TABLES = ["event_id", "event_count", "event_window", "event_crash"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("database")
    parser.add_argument("--namespace", default="storage")
    parser.add_argument("--range", nargs=2, type=int, metavar=("FROM_MS", "UNTIL_MS"))
    args = parser.parse_args()
    connection = sqlite3.connect(f"file:{args.database}?mode=ro", uri=True)
    owner = dict(connection.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')"))
    sizes = {}
    for name, size in connection.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
        table = owner.get(name, name)
        sizes[table] = sizes.get(table, 0) + size
    result = {"file_bytes": os.path.getsize(args.database),
              "wal_bytes": os.path.getsize(args.database + "-wal") if os.path.exists(args.database + "-wal") else 0,
              "tables": {}}
    for table in TABLES:
        rows = connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        result["tables"][table] = {"rows": rows, "bytes": sizes.get(table, 0),
                                   "bytes_per_row": round(sizes.get(table, 0) / rows, 1) if rows else None}
    result["all_bytes"] = sum(sizes.values())
    if args.range:
        low, high = args.range
        total, minutes = connection.execute(
            "SELECT count(*), count(*) FILTER (WHERE bucket_ms % 3600000 != 0) FROM event_count "
            "WHERE namespace = ? AND bucket_ms >= ? AND bucket_ms < ?", (args.namespace, low, high)).fetchone()
        result["range"] = {"counters": total, "per_minute": minutes}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
