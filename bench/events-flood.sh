#!/usr/bin/env bash
# Changes first: an editor's kill-switch change (request to answer) at rest and while 4 clients post event batches
# of 100 sessions as fast as they can, against a release flagsd on SQLite (rest and flood rounds interleaved, same
# run). The goal: p99 under the flood at most 2× at rest. The load client is on loopback, one address, so the
# per-address and per-token event rates are off: the flood reaches the ingestion queue.
#
# 8 rounds of 100 changes at rest and 100 during the flood by default: a p99 from 800 changes rests on 8 of them.
#
#   bench/events-flood.sh
#   CLIENTS=8 ROUNDS=5 CHANGES=200 bench/events-flood.sh
#   FLOOD_UNITS=1000 bench/events-flood.sh    # sessions drawn from 1,000 units (default: each its own unit)
#   FLOOD_IDS=time bench/events-flood.sh      # event ids as the client runtime makes them, beginning with their time
#                                             # (random: every id random; default batch: a random prefix per batch)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
MACHINE=$(machine_line)
start_flagsd_for_events
# What flagsd writes to storage meanwhile (the kernel's count of bytes it sent towards the disk): the flood's events
# and the editor's changes share the disk, and a change is acknowledged after its own sync.
written() { awk '/^write_bytes/ {print $2}' "/proc/$FLAGSD_PID/io"; }
WRITTEN_BEFORE=$(written)
FLOOD=$(.venv-bench/bin/python bench/flagsd/guard.py flood --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" \
  --seconds "${SECONDS_PER_ROUND:-10}" --rounds "${ROUNDS:-8}" --connections "${CLIENTS:-4}" --batch "${BATCH:-100}" \
  --changes "${CHANGES:-100}")
WRITTEN=$(( $(written) - WRITTEN_BEFORE ))
stop_flagsd
echo "### Changes first: kill-switch latency during an event flood ($(date -u +%F), commit $(git rev-parse --short HEAD))"
echo
echo "Machine: $MACHINE. flagsd release build on SQLite; the Python load client (uvloop) shares the cores."
echo
python3 - "$FLOOD" "$WRITTEN" <<'PY'
import json, sys
f = json.loads(sys.argv[1])
written = int(sys.argv[2])
print(f"| kill-switch change (request → answer) | changes | p50 ms | p90 ms | p95 ms | p99 ms | max ms |")
print("|---|---:|---:|---:|---:|---:|---:|")
for phase, name in (("rest", "at rest"), ("flood", f"during a flood from {f['clients']} clients ({f['batch']} sessions per batch, {f['flood_events_per_second']} events/s counted, {f['flood_batches_refused']} batches refused 429)")):
    p = f[phase]
    print(f"| {name} | {p['changes']} | {p['p50_ms']} | {p['p90_ms']} | {p['p95_ms']} | {p['p99_ms']} | {p['max_ms']} |")
print(f"| ratio flood / rest | | {f['ratio_p50_flood_to_rest']} | {round(f['flood']['p90_ms'] / f['rest']['p90_ms'], 2)} | {round(f['flood']['p95_ms'] / f['rest']['p95_ms'], 2)} | **{f['ratio_p99_flood_to_rest']}** | |")
print()
c = f["commit_mean_ms"]
o = f["commit_over_5ms"]
r = f["routed_over_5ms"]
s, t = f["commit_over_50ms"], f["routed_over_50ms"]
units = f"{f['flood_units']} units" if f.get("flood_units") else "as many units as sessions (20,000)"
ids = {"batch": "a random prefix per batch", "random": "every id random",
       "time": "every id beginning with its time"}[f.get("flood_ids", "batch")]
print(f"Over 50 ms (the rare stalls; max above): in the store {s['rest']} at rest, {s['flood']} during the flood; in the router {t['rest']} at rest, {t['flood']} during the flood.")
print()
print(f"Mean time of a change inside flagsd's store (the commit, its wait for the writer included): at rest {c['rest']} ms, during the flood {c['flood']} ms; the rest of a change's latency is the request's way through flagsd and the load client. Changes that spent more than 5 ms in the store: {o['rest']} at rest, {o['flood']} during the flood; more than 5 ms in flagsd's router (request to response): {r['rest']} at rest, {r['flood']} during the flood (of {f['rest']['changes']} each). The editor's process ran at nice {f['editor_nice']}, the flooding clients' at nice {f.get('flood_nice', 0)}; sessions drawn from {units}; event ids: {ids}.")
print()
print(f"flagsd wrote {written / 2**20:.0f} MiB towards the disk during the run ({written / max(f['flood_events'], 1) / 1024:.1f} KiB per event counted, {f['flood_events']} events).")
PY
