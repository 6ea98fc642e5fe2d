#!/usr/bin/env python3
"""Experiments' capacity against a running flagsd (bench/experiment-capacity.sh starts one, on SQLite or PostgreSQL):

fill   creates the namespace `capacity` (one plugin switch at 50 %, four declared metrics: trip_booked conversion,
       trips count, fare value, time_to_book value; caps per unit and address raised so that nothing is dropped),
       then posts U units in rounds: per round, first the pre-exposure metric events of a fifth of the round's units
       (fare and trips, no split named: before they entered), then one session per unit naming the split (the unit
       enters `with` or `without`, alternately: half each arm), then ~3.5 metric events per unit naming the split
       (trip_booked, trips, fare for every unit; time_to_book for every other one). Batches of up to --batch events,
       --connections at a time; each phase's events per second are summed over the rounds, so sessions-only and
       metric-only batches are measured in the same run, interleaved.
time   median (and every) time of GET …/experiments/{key} and GET …/experiments/{key}/units (the CSV), and, in
       the same rounds, of the references GET /healthz and GET …/flag-set: ratios to them.

Prints one JSON object. Needs uvloop (the venv bench/flagsd-common.sh makes).
"""
import argparse
import asyncio
import json
import random
import statistics
import time
import uuid

import uvloop

NAMESPACE = "capacity"
SWITCH = "plugin_switch_capacity"
METRICS = {
    "trip_booked": {"kind": "conversion", "description": "A rider booked a trip."},
    "trips": {"kind": "count", "cap": 20},
    "fare": {"kind": "value", "cap": 200},
    "time_to_book": {"kind": "value", "cap": 600, "better": "lower"},
}


def flag_set() -> dict:
    return {
        # Every batch comes from the load client's one address: the caps stay on but cannot drop anything here.
        "crash_guard": {"enabled": False, "max_sessions_per_unit": 1000, "max_sessions_per_address": 100000000},
        "plugin_points": [{"name": "capacity_point", "switches": [SWITCH]}],
        "flags": {SWITCH: {"type": "plugin_switch", "rollout": 5000}},
        "metrics": METRICS,
    }


class Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host, port, token):
        self.host, self.port, self.token = host, port, token
        self.reader = self.writer = None

    async def request(self, method, path, body=b""):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 24)
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        self.writer.write(head.encode() + body)
        status = int((await self.reader.readline()).split()[1])
        length, chunked = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value.strip())
            elif name.lower() == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if chunked:
            data = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                if size == 0:
                    await self.reader.readline()
                    break
                data += await self.reader.readexactly(size)
                await self.reader.readline()
            return status, data
        return status, (await self.reader.readexactly(length) if length else b"")

    def close(self):
        if self.writer is not None:
            self.writer.close()


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def session(unit: str, arm: bool, at: float) -> dict:
    event_id = uuid.uuid4().hex
    return {"id": event_id, "type": "session", "time": stamp(at), "session_id": event_id, "start": stamp(at - 300),
            "end": stamp(at - 1), "crashed": False, "switches": [SWITCH] if arm else [], "unit": unit,
            "splits": {SWITCH: arm}}


def metric(unit: str, name: str, value: float, at: float, arm=None) -> dict:
    event = {"id": uuid.uuid4().hex, "type": "metric", "time": stamp(at), "unit": unit, "metric": name, "value": value,
             "variants": {}, "switches": [SWITCH] if arm else []}
    event["splits"] = {} if arm is None else {SWITCH: arm}
    return event


async def post_all(host, port, token, batches, connections, counts):
    queue = list(reversed(batches))

    async def worker():
        connection = Connection(host, port, token)
        while queue:
            events = queue.pop()
            status, data = await connection.request("POST", f"/v1/namespaces/{NAMESPACE}/events",
                                                    json.dumps({"events": events}).encode())
            assert status == 200, (status, data[:300])
            answer = json.loads(data)
            counts["accepted"] += len(answer.get("accepted", []))
            for drop in answer.get("dropped", []):
                counts["dropped"][drop.get("reason", "?")] = counts["dropped"].get(drop.get("reason", "?"), 0) + 1
            counts["rejected"] += len(answer.get("rejected", []))
        connection.close()

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return time.monotonic() - started


def chunks(events, size):
    return [events[i:i + size] for i in range(0, len(events), size)]


async def fill(host, port, admin, client, units, rounds, batch, connections, pre_share):
    setup = Connection(host, port, admin)
    status, data = await setup.request("POST", "/v1/namespaces", json.dumps(
        {"name": NAMESPACE, "reason_policy": "never", "flag_set": flag_set()}).encode())
    assert status == 201, (status, data)
    setup.close()
    rng = random.Random(30)
    phases = {kind: {"events": 0, "seconds": 0.0} for kind in ("pre", "sessions", "metrics")}
    counts = {"accepted": 0, "dropped": {}, "rejected": 0}
    made = 0
    pre_units = 0
    for index in range(rounds):
        count = units // rounds + (1 if index < units % rounds else 0)
        ids = [uuid.uuid4().hex for _ in range(count)]
        arms = [(made + i) % 2 == 0 for i in range(count)]
        made += count
        now = time.time()
        pre, sessions, metrics = [], [], []
        for i, unit in enumerate(ids):
            if rng.random() < pre_share:
                pre_units += 1
                pre.append(metric(unit, "fare", round(rng.uniform(5, 40), 2), now - 120))
                pre.append(metric(unit, "trips", 1, now - 120))
            sessions.append(session(unit, arms[i], now - 60))
            metrics.append(metric(unit, "trip_booked", 1, now - 30, arms[i]))
            metrics.append(metric(unit, "trips", 1, now - 30, arms[i]))
            metrics.append(metric(unit, "fare", round(rng.uniform(5, 40), 2), now - 30, arms[i]))
            if i % 2 == 0:
                metrics.append(metric(unit, "time_to_book", round(rng.uniform(10, 300), 1), now - 30, arms[i]))
        for kind, events in (("pre", pre), ("sessions", sessions), ("metrics", metrics)):
            if not events:
                continue
            phases[kind]["seconds"] += await post_all(host, port, client, chunks(events, batch), connections, counts)
            phases[kind]["events"] += len(events)
    for phase in phases.values():
        phase["events_per_second"] = round(phase["events"] / phase["seconds"]) if phase["seconds"] else None
        phase["seconds"] = round(phase["seconds"], 2)
    result = {"units": units, "pre_units": pre_units, "batch": batch, "connections": connections, "rounds": rounds,
              "phases": phases, "accepted": counts["accepted"], "dropped": counts["dropped"], "rejected": counts["rejected"]}
    result["ratio_metrics_to_sessions"] = round(phases["metrics"]["events_per_second"] / phases["sessions"]["events_per_second"], 3)
    return result


async def timing(host, port, admin, repeats):
    paths = {"results": f"/v1/namespaces/{NAMESPACE}/experiments/{SWITCH}",
             "units_csv": f"/v1/namespaces/{NAMESPACE}/experiments/{SWITCH}/units",
             "healthz": "/healthz",
             "flag_set": f"/v1/namespaces/{NAMESPACE}/flag-set"}
    times = {name: [] for name in paths}
    sizes = {}
    connection = Connection(host, port, admin)
    for name, path in paths.items():  # one warm-up each
        status, data = await connection.request("GET", path)
        assert status == 200, (name, status, data[:300])
        sizes[name] = len(data)
        if name == "results":
            report = json.loads(data)
            sizes["arms"] = {arm.get("arm"): arm.get("units") for arm in report.get("arms", [])}
        if name == "units_csv":
            sizes["csv_rows"] = data.count(b"\n") - 1
    for _ in range(repeats):
        for name, path in paths.items():
            started = time.monotonic()
            status, data = await connection.request("GET", path)
            times[name].append(round((time.monotonic() - started) * 1000, 2))
            assert status == 200, (name, status)
    connection.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {"repeats": repeats, "ms": times, "median_ms": medians, "bytes": sizes,
            "ratio_results_to_flag_set": round(medians["results"] / medians["flag_set"], 1),
            "ratio_units_to_flag_set": round(medians["units_csv"] / medians["flag_set"], 1),
            "ratio_results_to_healthz": round(medians["results"] / medians["healthz"], 1),
            "ratio_units_to_healthz": round(medians["units_csv"] / medians["healthz"], 1)}


async def client_token(host, port, admin):
    connection = Connection(host, port, admin)
    status, data = await connection.request("POST", "/v1/tokens", json.dumps(
        {"name": f"capacity-client-{uuid.uuid4().hex[:8]}", "role": "client", "namespaces": [NAMESPACE]}).encode())
    connection.close()
    assert status == 201, (status, data)
    return json.loads(data)["token"]


async def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["fill", "time"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--units", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--pre-share", type=float, default=0.2, help="share of units with pre-exposure events")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.mode == "fill":
        token = await client_token(args.host, args.port, args.admin_token)
        result = await fill(args.host, args.port, args.admin_token, token, args.units, args.rounds, args.batch,
                            args.connections, args.pre_share)
    else:
        result = await timing(args.host, args.port, args.admin_token, args.repeats)
    print(json.dumps(result))


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main())
