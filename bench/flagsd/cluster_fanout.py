#!/usr/bin/env python3
"""Cross-instance propagation: N long-polls wait on each of several flagsd instances sharing one PostgreSQL
database; a change is sent to the first instance; each waiter's time from sending the change to holding the new
snapshot is measured, per instance. The first instance's own waiters are the same-run reference; the others get
the change through PostgreSQL (NOTIFY, then a read of the new version). Repeated for several rounds. Prints one
JSON object.

Needs uvloop (bench/flagsd-cluster.sh makes a venv) and a file descriptor limit above N times the instances.
"""
import argparse
import asyncio
import http.client
import json
import os
import re
import statistics
import sys
import time

import uvloop

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fanout import Waiter, percentile  # noqa: E402


def snapshot_etag(port: int, namespace: str, token: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("GET", f"/v1/namespaces/{namespace}/snapshot", headers={"Authorization": f"Bearer {token}"})
    response = connection.getresponse()
    response.read()
    return response.getheader("ETag")


def parked(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("GET", "/metrics")
    metrics = connection.getresponse().read().decode()
    match = re.search(r"(?m)^flagsd_long_poll_waiters (\d+(?:\.\d+)?)", metrics)
    return int(float(match.group(1))) if match else 0


async def round_trip(args, loop, round_index: int) -> dict:
    etag = snapshot_etag(args.ports[0], args.namespace, args.token)
    for port in args.ports[1:]:
        # Every instance must hold the current version before waiters park on it.
        deadline = time.monotonic() + 30
        while snapshot_etag(port, args.namespace, args.token) != etag:
            if time.monotonic() > deadline:
                raise SystemExit(f"instance on port {port} did not reach {etag} in 30 s")
            await asyncio.sleep(0.05)
    encoding = "Accept-Encoding: gzip\r\n" if args.gzip else ""
    futures = {port: [] for port in args.ports}
    waiters = []
    for port in args.ports:
        request = (f"GET /v1/namespaces/{args.namespace}/snapshot?wait=120 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"Authorization: Bearer {args.token}\r\nIf-None-Match: {etag}\r\n{encoding}\r\n").encode()
        for start in range(0, args.clients, 250):
            batch = []
            for _ in range(min(250, args.clients - start)):
                done = loop.create_future()
                futures[port].append(done)
                batch.append(loop.create_connection(lambda done=done, request=request: Waiter(request, done), "127.0.0.1", port))
            waiters += [protocol for _, protocol in await asyncio.gather(*batch)]
    deadline = time.monotonic() + 90
    while not all(parked(port) >= args.clients for port in args.ports):
        if time.monotonic() > deadline:
            raise SystemExit(f"not every waiter parked after 90 s: {[parked(port) for port in args.ports]}")
        await asyncio.sleep(0.05)

    base_version = int(etag.strip('"').rsplit(".", 1)[1])
    body = json.dumps({"rollout": 1000 + base_version, "reason": "cluster fan-out benchmark"}).encode()
    change_done = loop.create_future()
    change = (f"POST /v1/namespaces/{args.namespace}/flags/plugin_switch_point_000_1/rollout HTTP/1.1\r\n"
              f"Host: 127.0.0.1\r\nAuthorization: Bearer {args.token}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    t0 = time.monotonic()
    await loop.create_connection(lambda: Waiter(change, change_done), "127.0.0.1", args.ports[0])
    results = {port: await asyncio.gather(*futures[port]) for port in args.ports}
    change_time, change_status, _, _ = await change_done
    for waiter in waiters:
        waiter.closing = True
        waiter.transport.close()
    out = {"round": round_index, "change_ack_ms": (change_time - t0) * 1000, "change_status": change_status, "instances": {}}
    for port, items in results.items():
        out["instances"][port] = {
            "latencies_ms": [(at - t0) * 1000 for at, _, _, _ in items],
            "statuses": sorted({status for _, status, _, _ in items}),
            "versions": sorted({version for _, _, version, _ in items if version}),
            "base_version": base_version,
        }
    await asyncio.sleep(0.5)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ports", required=True, help="comma-separated ports; the change goes to the first")
    parser.add_argument("--namespace", default="bench")
    parser.add_argument("--token", required=True)
    parser.add_argument("--clients", type=int, default=5000, help="waiters per instance")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    args.ports = [int(port) for port in args.ports.split(",")]
    loop = asyncio.get_running_loop()
    client_before = time.process_time()
    rounds = [await round_trip(args, loop, index) for index in range(args.rounds)]
    summary = {"clients_per_instance": args.clients, "rounds": args.rounds, "gzip": args.gzip,
               "client_cpu_ms": round((time.process_time() - client_before) * 1000),
               "change_ack_ms": [round(r["change_ack_ms"], 1) for r in rounds], "instances": []}
    for index, port in enumerate(args.ports):
        latencies = [ms for r in rounds for ms in r["instances"][port]["latencies_ms"]]
        firsts = [min(r["instances"][port]["latencies_ms"]) for r in rounds]
        statuses = sorted({s for r in rounds for s in r["instances"][port]["statuses"]})
        wrong = [r["round"] for r in rounds if r["instances"][port]["versions"] != [r["instances"][port]["base_version"] + 1]]
        summary["instances"].append({
            "instance": "A (change sent here)" if index == 0 else f"{chr(65 + index)} (through PostgreSQL)",
            "port": port, "statuses": statuses, "rounds_with_wrong_version": wrong,
            "p50_ms": round(statistics.median(latencies), 1), "p99_ms": round(percentile(latencies, 99), 1),
            "max_ms": round(max(latencies), 1), "first_ms_median": round(statistics.median(firsts), 1),
        })
    print(json.dumps(summary))


if __name__ == "__main__":
    uvloop.run(main())
