#!/usr/bin/env python3
"""What remembering an event's id writes, by how the ids are keyed and how clients draw them (issue 33, goal 4).

Builds an events-file-like SQLite table (1 KiB pages, write-ahead log, no automatic checkpoint) holding PRELOAD ids,
then adds BATCHES batches of 100 in a transaction each and prints the log's bytes per event for two keys:
  by id:   PRIMARY KEY (namespace, id) and an index by time (the events file)
  by time: PRIMARY KEY (time_ms, namespace, id) (a trial, not kept: bench/README.md says why)
and four ways of drawing ids and times:
  batch:    a random prefix per batch, each batch's events at one of 64 times (bench/events-flood.sh's default)
  random:   every id random, each batch at one of 64 times (FLOOD_IDS=random: the flood resends 64 bodies)
  realtime: every id random, times rising with the clock (clients that draw random ids)
  hostile:  every id random, each time random over the 7 days flagsd accepts
The checkpoint later writes most of these pages once more into the file.

  python3 bench/flagsd/event_keys.py            # ~2 min
  PRELOAD=2000000 python3 bench/flagsd/event_keys.py
"""
import os
import random
import sqlite3
import sys
import tempfile

PRELOAD = int(os.environ.get("PRELOAD", "1000000"))
BATCHES = int(os.environ.get("BATCHES", "2000"))
KEYS = {
    "by id": """CREATE TABLE event_id (namespace TEXT NOT NULL, id TEXT NOT NULL, time_ms INTEGER NOT NULL,
                received_ms INTEGER NOT NULL, PRIMARY KEY (namespace, id)) WITHOUT ROWID;
                CREATE INDEX event_id_time ON event_id(time_ms);""",
    "by time": """CREATE TABLE event_id (time_ms INTEGER NOT NULL, namespace TEXT NOT NULL, id TEXT NOT NULL,
                  received_ms INTEGER NOT NULL, PRIMARY KEY (time_ms, namespace, id)) WITHOUT ROWID;""",
}
DRAWS = ["batch", "random", "realtime", "hostile"]
T0 = 1_780_000_000_000


def log_bytes_per_event(key: str, draw: str, folder: str) -> float:
    path = os.path.join(folder, f"{key.replace(' ', '-')}-{draw}.sqlite")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA page_size = 1024")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.executescript(KEYS[key])
    rng = random.Random(7)
    bodies = [T0 + index * 37 for index in range(64)]
    clock = [T0]

    def batch():
        prefix, at = os.urandom(3).hex(), rng.choice(bodies)
        rows = []
        for _ in range(100):
            if draw == "realtime":
                clock[0] += 1
                at = clock[0]
            elif draw == "hostile":
                at = T0 + rng.randrange(7 * 86_400_000)
            rows.append(("rider", (prefix if draw == "batch" else "") + os.urandom(16).hex(), at, T0))
        return rows

    def add(batches):
        for _ in range(batches):
            db.execute("BEGIN")
            db.executemany("INSERT OR IGNORE INTO event_id (namespace, id, time_ms, received_ms) VALUES (?, ?, ?, ?)",
                           batch())
            db.execute("COMMIT")

    add(PRELOAD // 100)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = os.path.getsize(path + "-wal")
    add(BATCHES)
    written = os.path.getsize(path + "-wal") - before
    db.close()
    return written / (BATCHES * 100)


def main():
    with tempfile.TemporaryDirectory() as folder:
        print(f"Log bytes per event remembered ({PRELOAD:,} ids already kept, {BATCHES * 100:,} added in batches of 100):")
        print()
        print("| ids drawn | " + " | ".join(f"keyed {key}" for key in KEYS) + " |")
        print("|---|" + "---:|" * len(KEYS))
        for draw in DRAWS:
            cells = [f"{log_bytes_per_event(key, draw, folder):,.0f}" for key in KEYS]
            print(f"| {draw} | " + " | ".join(cells) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
