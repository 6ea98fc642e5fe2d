"""Hostile connections against flagsd: thousands of silent and slow-header (slowloris) sockets, reopened as soon as
flagsd closes them, while real clients poll the snapshot. Prints one JSON object.

What it measures, at rest and under the attack, in one run: the latency of real requests on a connection opened
before the attack and on new connections (answered or closed unanswered), flagsd's open file descriptors and RSS
(from /proc), and flagsd's connection counters (/metrics) at the end.
"""

import argparse
import asyncio
import json
import os
import statistics
import time

import uvloop


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else None


def process_usage(pid):
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return {"fds": len(os.listdir(f"/proc/{pid}/fd")), "rss_mib": round(rss / 1024, 1)}


def request(path, token):
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n").encode()


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length:
        await reader.readexactly(length)
    return int(head.split(b" ", 2)[1])


async def probe_kept(reader, writer, payload):
    started = time.monotonic()
    writer.write(payload)
    status = await read_response(reader)
    assert status == 200, status
    return (time.monotonic() - started) * 1000


async def probe_new(host, port, payload, timeout):
    """A real client's poll on a new connection: its latency in ms, or None when flagsd closed it unanswered."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        writer.write(payload)
        status = await asyncio.wait_for(read_response(reader), timeout)
        writer.close()
        return (time.monotonic() - started) * 1000 if status == 200 else None
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError, OSError):
        return None


async def hostile(host, port, slow, stop, counts):
    """One attacker's socket, reopened whenever flagsd closes it: silent, or a head sent a byte per second."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            await asyncio.sleep(0.25)
            continue
        counts["opened"] += 1
        opened = time.monotonic()
        try:
            if slow:
                writer.write(b"GET /v1/namespaces/bench/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            while not stop.is_set():
                if slow:
                    writer.write(b"a")
                    await writer.drain()
                try:
                    data = await asyncio.wait_for(reader.read(1), 1.0)
                    if not data:
                        break
                except asyncio.TimeoutError:
                    continue
        except (ConnectionError, OSError):
            pass
        held = time.monotonic() - opened
        counts["held"].append(held)
        writer.close()
        # Closed at once (refused past the cap): an attacker would retry at once; a short pause keeps this Python
        # client from taking the cores flagsd needs.
        if held < 0.5:
            await asyncio.sleep(0.25)


async def metrics(host, port, token):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(request("/metrics", token))
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    body = (await reader.readexactly(length)).decode()
    writer.close()
    values = {}
    for line in body.splitlines():
        if line.startswith("flagsd_connections"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


async def phase(host, port, payload, kept, probes, pid, timeout):
    kept_ms, new_ms, refused = [], [], 0
    usage = []
    for _ in range(probes):
        kept_ms.append(await probe_kept(*kept, payload))
        latency = await probe_new(host, port, payload, timeout)
        if latency is None:
            refused += 1
        else:
            new_ms.append(latency)
        usage.append(process_usage(pid))
        await asyncio.sleep(0.05)
    summary = lambda values: {"p50_ms": round(percentile(values, 50), 2), "p99_ms": round(percentile(values, 99), 2)} if values else None
    return {"kept_connection": summary(kept_ms), "new_connections": summary(new_ms),
            "new_answered": probes - refused, "new_unanswered": refused,
            "max_fds": max(u["fds"] for u in usage), "max_rss_mib": max(u["rss_mib"] for u in usage)}


async def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--silent", type=int, default=2000)
    parser.add_argument("--slow", type=int, default=2000)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--attack-seconds", type=float, default=30)
    args = parser.parse_args()
    payload = request("/v1/namespaces/bench/snapshot", args.token)
    kept = await asyncio.open_connection(args.host, args.port)

    at_rest = await phase(args.host, args.port, payload, kept, args.probes, args.pid, 10)
    at_rest.update(process_usage(args.pid))

    stop = asyncio.Event()
    counts = {"opened": 0, "held": []}
    attackers = [asyncio.ensure_future(hostile(args.host, args.port, index >= args.silent, stop, counts))
                 for index in range(args.silent + args.slow)]
    await asyncio.sleep(3)  # the attack ramps up: every hostile socket opened once
    started = time.monotonic()
    under_attack = await phase(args.host, args.port, payload, kept, args.probes, args.pid, 10)
    while time.monotonic() - started < args.attack_seconds:
        await asyncio.sleep(0.5)
    under_attack["hostile_connections_opened"] = counts["opened"]
    under_attack["hostile_held_p50_s"] = round(statistics.median(counts["held"]), 2) if counts["held"] else None
    under_attack["hostile_held_max_s"] = round(max(counts["held"]), 2) if counts["held"] else None
    stop.set()
    await asyncio.gather(*attackers, return_exceptions=True)

    await asyncio.sleep(1)
    after = await phase(args.host, args.port, payload, kept, 20, args.pid, 10)
    result = {"at_rest": at_rest, "under_attack": under_attack, "after": after,
              "metrics": await metrics(args.host, args.port, args.token)}
    ratio = lambda a, b: round(a / b, 2) if a and b else None
    result["kept_p50_ratio"] = ratio(under_attack["kept_connection"]["p50_ms"], at_rest["kept_connection"]["p50_ms"])
    result["kept_p99_ratio"] = ratio(under_attack["kept_connection"]["p99_ms"], at_rest["kept_connection"]["p99_ms"])
    print(json.dumps(result))


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main())
