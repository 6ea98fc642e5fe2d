#!/usr/bin/env python3
"""The crash guard's figures against a running flagsd (bench/guard-ingest.sh starts one):

ingest   events ingested per second through POST /v1/namespaces/{ns}/events, with the crash guard assessing
         every batch (namespace guard-on) and, in the same run, interleaved, with the guard turned off by policy
         (namespace guard-off): the guard's cost on the ingestion path as a ratio.
wide     the same, into a namespace of 10,000 more plugin switches that no session names (namespace wide) and,
         interleaved, into one of only the sessions' 8 (narrow): what the namespace's width costs ingestion.
trip     time from sending the batch that trips a plugin switch until each of W long-poll clients holds the new
         snapshot; in the same run, the same for a person's `POST …/disable` (the reference path).
flood    an editor's kill-switch change (kill, then revive, of the master kill switch), request to answer, at rest and
         while C clients post event batches as fast as they can (rounds interleaved, same run): changes first.
storage  a simulated day of events: P sessions in every minute of the last 24 hours (the flood's sessions), posted
         as late reports with their times; then the same for H hours three days ago (rolled up into hours by
         flagsd's hourly upkeep after a restart: bench/events-storage.sh). Prints what was posted.

Prints one JSON object. Needs uvloop (the venv bench/flagsd-common.sh makes).
"""
import argparse
import asyncio
import json
import os
import random
import re
import statistics
import time
import uuid

import uvloop

SWITCHES = [f"plugin_switch_bench_{i}" for i in range(8)]
CITIES = [f"city-{i}" for i in range(20)]


def flag_set(enabled: bool, others: int = 0) -> dict:
    # Every batch comes from the load client's one address: the caps per unit and address stay on (their counting is
    # part of what is measured) but high enough to keep every session, and one address suffices to trip.
    # `others` more plugin switches that no session names, half sorting before the sessions' switches and half after
    # (`aa_…`, `zz_…`), ten to a plugin point: a wide namespace around the same traffic.
    padding = [f"plugin_switch_{'aa' if i % 2 == 0 else 'zz'}_{i:05d}" for i in range(others)]
    return {
        "crash_guard": {"enabled": enabled, "min_sessions": 200, "min_crashes": 10, "cooldown": "0s", "min_addresses": 1,
                        "max_sessions_per_unit": 1000000, "max_sessions_per_address": 100000000},
        "plugin_points": [{"name": f"point_{i}", "switches": [key]} for i, key in enumerate(SWITCHES)]
        + [{"name": f"other_point_{i // 10}", "switches": padding[i:i + 10]} for i in range(0, others, 10)],
        "flags": {key: {"type": "plugin_switch", "rollout": 10000} for key in SWITCHES + padding},
    }


class Connection:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host, port, token):
        self.host, self.port, self.token = host, port, token
        self.reader = self.writer = None

    async def request(self, method, path, body=b"", headers=()):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers)
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length, etag = 0, None
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value.strip())
            elif name.lower() == "etag":
                etag = value.strip()
        data = await self.reader.readexactly(length) if length else b""
        return status, etag, data

    def close(self):
        if self.writer is not None:
            self.writer.close()


def session(crashed: bool, switches, city: str, at: float = None) -> dict:
    now = time.time() if at is None else at
    stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"
    event_id = uuid.uuid4().hex
    return {"id": event_id, "type": "session", "time": stamp(now - 1), "city": city, "cohorts": ["riders"],
            "app_version": "5.14.0", "platform": "ios", "session_id": event_id, "start": stamp(now - 300),
            "end": stamp(now - 2), "crashed": crashed, "switches": switches, "unit": event_id}


# The units the flood's sessions are drawn from (default 0: every session its own unit, 20,000 in all).
FLOOD_UNITS = int(os.environ.get("FLOOD_UNITS", "0"))
# How a body sent again gets fresh event ids (so that nothing counts as a duplicate), each 38 hex digits:
# "batch" (default) a random prefix per batch before each session's random id, so a batch's ids sort together;
# "random" every id random (the client runtime's ids before they began with their time); "time" every id beginning
# with the time it is sent less 300 s, in milliseconds (as the client runtime's version 7 UUIDs begin with the time
# a session started), so ids sort by time.
FLOOD_IDS = os.environ.get("FLOOD_IDS", "batch")
if FLOOD_IDS not in ("batch", "random", "time"):
    raise SystemExit(f"FLOOD_IDS={FLOOD_IDS}: expected batch, random or time")
EVENT_ID = re.compile(rb'"id": "([0-9a-f]{32})"')


def fresh_ids(body: bytes) -> bytes:
    """The body with fresh event ids, drawn as FLOOD_IDS says."""
    if FLOOD_IDS == "batch":
        return body.replace(b'"id": "', b'"id": "' + uuid.uuid4().hex[:6].encode())
    if FLOOD_IDS == "random":
        return EVENT_ID.sub(lambda m: b'"id": "' + os.urandom(3).hex().encode() + m[1] + b'"', body)
    start = b"%012x" % int((time.time() - 300) * 1000)  # as if the sessions started 300 s before they are sent
    return EVENT_ID.sub(lambda m: b'"id": "' + start + os.urandom(3).hex().encode() + m[1][:20] + b'"', body)


def batch_bodies(count: int, size: int, rng: random.Random, units: int = 0):
    """`count` bodies of `size` sessions, each session its own unit, or (`units` > 0) one of `units` units drawn at
    random: fewer units share the pages of the unit-keyed tables, so the events write fewer bytes each."""
    pool = [uuid.UUID(int=rng.getrandbits(128)).hex for _ in range(units)]
    bodies = []
    for _ in range(count):
        events = [session(rng.random() < 0.001, rng.sample(SWITCHES, 4), rng.choice(CITIES)) for _ in range(size)]
        if pool:
            for event in events:
                event["unit"] = rng.choice(pool)
        bodies.append(json.dumps({"events": events}).encode())
    return bodies


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def create(connection, name, body):
    status, _, data = await connection.request("POST", "/v1/namespaces", json.dumps(
        {"name": name, "reason_policy": "never", "flag_set": body}).encode())
    assert status == 201, (status, data)


async def ingest(host, port, admin, client, seconds, rounds, connections, size, sets=None):
    """Events per second into each namespace of `sets` (name → flag set; default guard-on and guard-off), rounds
    interleaved; the ratio of the first to the second."""
    sets = sets or {"guard-on": flag_set(True), "guard-off": flag_set(False)}
    setup = Connection(host, port, admin)
    for name, body in sets.items():
        await create(setup, name, body)
    setup.close()
    rng = random.Random(7)
    bodies = batch_bodies(400, size, rng)
    totals = {name: [0, 0.0, []] for name in sets}
    for _ in range(rounds):
        for namespace in sets:
            deadline = time.monotonic() + seconds
            counter = {"next": 0}

            async def worker():
                connection = Connection(host, port, client)
                sent = 0
                while time.monotonic() < deadline:
                    body = bodies[counter["next"] % len(bodies)]
                    counter["next"] += 1
                    body = fresh_ids(body)
                    started = time.monotonic()
                    status, _, data = await connection.request("POST", f"/v1/namespaces/{namespace}/events", body)
                    assert status == 200, (status, data[:200])
                    totals[namespace][2].append((time.monotonic() - started) * 1000)
                    sent += size
                connection.close()
                return sent

            started = time.monotonic()
            counts = await asyncio.gather(*(worker() for _ in range(connections)))
            totals[namespace][0] += sum(counts)
            totals[namespace][1] += time.monotonic() - started
    result = {}
    for namespace, (events, elapsed, latencies) in totals.items():
        result[namespace] = {"events": events, "seconds": round(elapsed, 2), "events_per_second": round(events / elapsed),
                             "batch_p50_ms": round(percentile(latencies, 50), 2), "batch_p99_ms": round(percentile(latencies, 99), 2)}
    first, second = list(sets)
    result["ratio"] = round(result[first]["events_per_second"] / result[second]["events_per_second"], 3)
    return result


async def wake(host, port, client, namespace, waiters, trigger):
    """Parks `waiters` long-polls on a namespace, runs `trigger`, and returns each waiter's time from the trigger."""
    probe = Connection(host, port, client)
    status, etag, _ = await probe.request("GET", f"/v1/namespaces/{namespace}/snapshot")
    assert status == 200
    probe.close()
    connections = [Connection(host, port, client) for _ in range(waiters)]
    times = []

    async def wait(connection):
        status, tag, _ = await connection.request("GET", f"/v1/namespaces/{namespace}/snapshot?wait=60", headers=[("If-None-Match", etag)])
        assert status == 200, status
        times.append(time.monotonic())

    tasks = [asyncio.ensure_future(wait(connection)) for connection in connections]
    await asyncio.sleep(1.0)  # every waiter parked
    started = time.monotonic()
    await trigger()
    acknowledged = time.monotonic()
    await asyncio.gather(*tasks)
    for connection in connections:
        connection.close()
    return [(t - started) * 1000 for t in times], (acknowledged - started) * 1000


async def trip(host, port, admin, client, waiters, repeats):
    setup = Connection(host, port, admin)
    for index in range(repeats):
        await create(setup, f"trip-{index}", flag_set(True))
        await create(setup, f"ref-{index}", flag_set(True))
    setup.close()
    guard, person, acks_guard, acks_person = [], [], [], []
    for index in range(repeats):
        # 300 sessions with plugin_switch_bench_0, 30 crashed, spread over every city: a global trip.
        events = [session(i % 10 == 0, ["plugin_switch_bench_0"], CITIES[i % len(CITIES)]) for i in range(300)]
        body = json.dumps({"events": events}).encode()
        poster = Connection(host, port, client)

        async def post():
            status, _, data = await poster.request("POST", f"/v1/namespaces/trip-{index}/events", body)
            assert status == 200, data

        times, ack = await wake(host, port, client, f"trip-{index}", waiters, post)
        guard += times
        acks_guard.append(ack)
        poster.close()
        editor = Connection(host, port, admin)

        async def disable():
            status, _, data = await editor.request("POST", f"/v1/namespaces/ref-{index}/flags/plugin_switch_bench_0/disable",
                                                   json.dumps({"reason": "bench"}).encode())
            assert status == 200, data

        times, ack = await wake(host, port, client, f"ref-{index}", waiters, disable)
        person += times
        acks_person.append(ack)
        editor.close()
    summary = lambda values: {"p50_ms": round(percentile(values, 50), 2), "p99_ms": round(percentile(values, 99), 2),
                              "max_ms": round(max(values), 2)}
    result = {"waiters": waiters, "repeats": repeats, "guard_trip": summary(guard), "person_disable": summary(person),
              "guard_batch_ack_p50_ms": round(statistics.median(acks_guard), 2),
              "person_change_ack_p50_ms": round(statistics.median(acks_person), 2)}
    result["ratio_p50_guard_to_person"] = round(result["guard_trip"]["p50_ms"] / result["person_disable"]["p50_ms"], 2)
    return result


def flood_process(host, port, client, connections, size, stop, results):
    """The flooding clients, in a process of their own, so that their asyncio loop never delays the editor's.

    FLOOD_NICE (default 0) is their niceness: on this machine they share flagsd's cores, where real clients would
    be on their own machines. Set, not added: the editor's process they are forked from may run at another."""
    os.setpriority(os.PRIO_PROCESS, 0, int(os.environ.get("FLOOD_NICE", "0")))
    uvloop.install()
    rng = random.Random(11)
    bodies = batch_bodies(200, size, rng, FLOOD_UNITS)

    async def run():
        counter = {"next": 0}

        async def worker():
            connection = Connection(host, port, client)
            sent = refused = 0
            while not stop.is_set():
                body = bodies[counter["next"] % len(bodies)]
                counter["next"] += 1
                body = fresh_ids(body)
                status, _, data = await connection.request("POST", "/v1/namespaces/flood/events", body)
                if status == 429:
                    refused += 1
                    continue
                assert status == 200, (status, data[:200])
                sent += size
            connection.close()
            return sent, refused

        done = await asyncio.gather(*(worker() for _ in range(connections)))
        results.put((sum(d[0] for d in done), sum(d[1] for d in done)))

    asyncio.run(run())


async def flood(host, port, admin, client, seconds, rounds, connections, size, changes):
    import multiprocessing
    setup = Connection(host, port, admin)
    await create(setup, "flood", flag_set(True))
    setup.close()
    latencies = {"rest": [], "flood": []}
    flooded = {"events": 0, "refused": 0, "seconds": 0.0}
    # flagsd's own time in store.change (the commit, the writer's queue included), per phase, from /metrics.
    # The third number: changes whose store time was 5 ms or less (the histogram's bucket), to tell a tail in the
    # store (its writer, fsync) from one outside it (the request's way through flagsd, the load client).
    commit = {"rest": [0.0, 0, 0], "flood": [0.0, 0, 0]}
    # Changes within 50 ms, in the store and in the router, to count the rare stalls over it (flagsd's, or the
    # client's and the machine's?).
    within_50ms = {"rest": [0, 0], "flood": [0, 0]}

    # flagsd's own time for the kill-switch requests (its router's, from the request to the response handed back to
    # the connection), per phase: [count, count within 5 ms].
    routed = {"rest": [0, 0], "flood": [0, 0]}

    async def commit_totals():
        probe = Connection(host, port, admin)
        _, _, data = await probe.request("GET", "/metrics")
        probe.close()
        lines = data.decode().splitlines()
        total = lambda name, *within: sum(float(line.split()[-1]) for line in lines
                                          if line.startswith(name) and all(part in line for part in within))
        kill = "flagsd_http_request_duration_seconds"
        return (total("flagsd_change_commit_duration_seconds_sum"), total("flagsd_change_commit_duration_seconds_count"),
                total('flagsd_change_commit_duration_seconds_bucket{le="0.005"'),
                total(f"{kill}_count", "kill-switches"), total(f"{kill}_bucket", "kill-switches", 'le="0.005"'),
                total('flagsd_change_commit_duration_seconds_bucket{le="0.05"'),
                total(f"{kill}_bucket", "kill-switches", 'le="0.05"'))

    async def phase(name, run):
        before = await commit_totals()
        await run()
        after = await commit_totals()
        for index in range(3):
            commit[name][index] += after[index] - before[index]
        for index in range(2):
            routed[name][index] += after[3 + index] - before[3 + index]
        for index in range(2):
            within_50ms[name][index] += after[5 + index] - before[5 + index]

    # The editor's connection is opened (and used once) before anything is timed, and kept: a change's latency is its
    # request's, not a TCP handshake's (which, once per phase, would be exactly the p99 of 100 changes a round).
    # EDITOR_NICE (default 0) is the niceness of this process, the editor's: on this machine the flooding clients
    # share its cores, where an editor would be on a machine of its own.
    os.setpriority(os.PRIO_PROCESS, 0, int(os.environ.get("EDITOR_NICE", "0")))
    editor = Connection(host, port, admin)
    await editor.request("GET", "/healthz")

    async def kill_switch_changes(into):
        for index in range(changes):
            action = "kill" if index % 2 == 0 else "revive"
            started = time.monotonic()
            status, _, data = await editor.request("POST", f"/v1/namespaces/flood/kill-switches/master/{action}",
                                                   json.dumps({"reason": "bench"}).encode())
            into.append((time.monotonic() - started) * 1000)
            assert status == 200, (status, data[:200])
            await asyncio.sleep(seconds / changes)

    for _ in range(rounds):
        await phase("rest", lambda: kill_switch_changes(latencies["rest"]))
        stop, results = multiprocessing.Event(), multiprocessing.Queue()
        process = multiprocessing.Process(target=flood_process, args=(host, port, client, connections, size, stop, results))
        started = time.monotonic()
        process.start()
        await asyncio.sleep(1.0)  # the flood is running
        await phase("flood", lambda: kill_switch_changes(latencies["flood"]))
        stop.set()
        sent, refused = await asyncio.get_running_loop().run_in_executor(None, results.get)
        process.join()
        flooded["events"] += sent
        flooded["refused"] += refused
        flooded["seconds"] += time.monotonic() - started
    summary = lambda values: {"changes": len(values), "p50_ms": round(percentile(values, 50), 2),
                              "p90_ms": round(percentile(values, 90), 2), "p95_ms": round(percentile(values, 95), 2),
                              "p99_ms": round(percentile(values, 99), 2), "max_ms": round(max(values), 2)}
    result = {"clients": connections, "batch": size, "rest": summary(latencies["rest"]), "flood": summary(latencies["flood"]),
              "flood_events_per_second": round(flooded["events"] / flooded["seconds"]),
              "flood_batches_refused": flooded["refused"], "flood_events": flooded["events"],
              "commit_mean_ms": {name: round(total / max(count, 1) * 1000, 2) for name, (total, count, _) in commit.items()},
              "commit_over_5ms": {name: int(count - within) for name, (_, count, within) in commit.items()},
              "routed_over_5ms": {name: int(count - within) for name, (count, within) in routed.items()},
              "commit_over_50ms": {name: int(commit[name][1] - within_50ms[name][0]) for name in commit},
              "routed_over_50ms": {name: int(routed[name][0] - within_50ms[name][1]) for name in routed},
              "editor_nice": os.getpriority(os.PRIO_PROCESS, 0), "flood_nice": int(os.environ.get("FLOOD_NICE", "0")),
              "flood_units": FLOOD_UNITS, "flood_ids": FLOOD_IDS}
    editor.close()
    result["ratio_p50_flood_to_rest"] = round(result["flood"]["p50_ms"] / result["rest"]["p50_ms"], 2)
    result["ratio_p99_flood_to_rest"] = round(result["flood"]["p99_ms"] / result["rest"]["p99_ms"], 2)
    return result


async def storage(host, port, client, per_minute, minutes, days_ago, connections, create_namespace, admin):
    """Posts `per_minute` sessions for each of `minutes` minutes ending `days_ago` days ago, `connections` at a time."""
    if create_namespace:
        setup = Connection(host, port, admin)
        await create(setup, "storage", flag_set(True))
        setup.close()
    rng = random.Random(11)
    end = time.time() - days_ago * 86_400
    start = end - minutes * 60
    queue = list(range(minutes))
    posted = {"events": 0}

    async def worker():
        connection = Connection(host, port, client)
        while queue:
            minute = queue.pop()
            at = start + minute * 60 + 30
            events = [session(rng.random() < 0.001, rng.sample(SWITCHES, 4), rng.choice(CITIES), at=at) for _ in range(per_minute)]
            for first in range(0, len(events), 500):
                part = events[first:first + 500]
                status, _, data = await connection.request("POST", "/v1/namespaces/storage/events", json.dumps({"events": part}).encode())
                assert status == 200, (status, data[:300])
                posted["events"] += len(part)
        connection.close()

    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return {"events": posted["events"], "minutes": minutes, "per_minute": per_minute, "days_ago": days_ago,
            "seconds": round(time.monotonic() - started, 1)}


async def client_token(host, port, admin, namespaces):
    connection = Connection(host, port, admin)
    status, _, data = await connection.request("POST", "/v1/tokens", json.dumps(
        {"name": f"bench-client-{uuid.uuid4().hex[:8]}", "role": "client", "namespaces": namespaces}).encode())
    connection.close()
    assert status == 201, (status, data)
    return json.loads(data)["token"]


async def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["ingest", "wide", "trip", "flood", "storage"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--others", type=int, default=10000, help="switches no session names in the wide namespace (wide)")
    parser.add_argument("--waiters", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--changes", type=int, default=50, help="kill-switch changes per round and phase (flood)")
    parser.add_argument("--per-minute", type=int, default=200, help="sessions per simulated minute (storage)")
    parser.add_argument("--minutes", type=int, default=1440, help="simulated minutes (storage)")
    parser.add_argument("--days-ago", type=float, default=0, help="the simulated minutes end this many days ago (storage)")
    parser.add_argument("--create", action="store_true", help="create the storage namespace first (storage)")
    args = parser.parse_args()
    # Client tokens name the namespaces they serve: the ones this run creates.
    namespaces = ["guard-on", "guard-off", "wide", "narrow", "flood", "storage"] + [f"{kind}-{index}" for index in range(args.repeats) for kind in ("trip", "ref")]
    args.client_token = await client_token(args.host, args.port, args.admin_token, namespaces)
    if args.mode == "ingest":
        result = await ingest(args.host, args.port, args.admin_token, args.client_token, args.seconds, args.rounds,
                              args.connections, args.batch)
    elif args.mode == "wide":
        result = await ingest(args.host, args.port, args.admin_token, args.client_token, args.seconds, args.rounds,
                              args.connections, args.batch,
                              {"wide": flag_set(True, args.others), "narrow": flag_set(True)})
    elif args.mode == "flood":
        result = await flood(args.host, args.port, args.admin_token, args.client_token, args.seconds, args.rounds,
                             args.connections, args.batch, args.changes)
    elif args.mode == "storage":
        result = await storage(args.host, args.port, args.client_token, args.per_minute, args.minutes, args.days_ago,
                               args.connections, args.create, args.admin_token)
    else:
        result = await trip(args.host, args.port, args.admin_token, args.client_token, args.waiters, args.repeats)
    print(json.dumps(result))


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main())
