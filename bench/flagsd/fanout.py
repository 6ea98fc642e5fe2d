#!/usr/bin/env python3
"""Long-poll fan-out: N clients wait on a namespace's snapshot, one change is made, and each client's time from
sending the change to holding the new snapshot is measured. Prints one JSON object.

Needs uvloop (bench/flagsd-fanout.sh makes a venv) and a file descriptor limit above N.
"""
import argparse
import asyncio
import http.client
import json
import os
import re
import statistics
import time

import uvloop


class Waiter(asyncio.Protocol):
    """One parked long-poll: records when its complete response arrived."""

    def __init__(self, request: bytes, done: asyncio.Future):
        self.request, self.done, self.buffer = request, done, bytearray()
        self.header_end, self.length = -1, None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data):
        self.buffer += data
        if self.header_end < 0:
            self.header_end = self.buffer.find(b"\r\n\r\n")
            if self.header_end < 0:
                return
            head = bytes(self.buffer[:self.header_end]).decode("latin-1")
            match = re.search(r"(?im)^content-length:\s*(\d+)", head)
            self.length = int(match.group(1)) if match else 0
            self.status = int(head.split(" ", 2)[1])
            tag = re.search(r'(?im)^etag:\s*"[^".]*\.(\d+)"', head)
            self.version = int(tag.group(1)) if tag else None
        if len(self.buffer) - self.header_end - 4 >= self.length and not self.done.done():
            # Keep the connection open, as a client about to poll again would; closed after the measurement.
            self.done.set_result((time.monotonic(), self.status, self.version, len(self.buffer)))

    def connection_lost(self, exc):
        if not self.done.done() and not getattr(self, "closing", False):
            self.done.set_exception(ConnectionError(f"closed before a response: {exc}"))


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--namespace", default="bench")
    parser.add_argument("--token", required=True)
    parser.add_argument("--clients", type=int, default=10_000)
    parser.add_argument("--gzip", action="store_true", help="accept gzip, as real clients do")
    parser.add_argument("--delta", action="store_true", help="accept deltas (Accept: application/vnd.switchyard.snapshot-delta+json)")
    parser.add_argument("--pid", type=int, help="flagsd's pid, for its RSS")
    parser.add_argument("--waiters-binary", help="hold the waiting connections with this C program (bench/flagsd/waiters.c) "
                        "instead of asyncio: a cheaper load client on the shared cores")
    args = parser.parse_args()

    auth = {"Authorization": f"Bearer {args.token}"}
    connection = http.client.HTTPConnection(args.host, args.port)
    connection.request("GET", f"/v1/namespaces/{args.namespace}/snapshot", headers=auth)
    response = connection.getresponse()
    response.read()
    etag = response.getheader("ETag")
    base_version = int(etag.strip('"').rsplit(".", 1)[1])
    rss_before = rss_kib(args.pid, "VmRSS") if args.pid else None

    encoding = "Accept-Encoding: gzip\r\n" if args.gzip else ""
    accept = "Accept: application/vnd.switchyard.snapshot-delta+json, application/json\r\n" if args.delta else ""
    request = (f"GET /v1/namespaces/{args.namespace}/snapshot?wait=120 HTTP/1.1\r\nHost: {args.host}\r\n"
               f"Authorization: Bearer {args.token}\r\nIf-None-Match: {etag}\r\n{encoding}{accept}\r\n").encode()
    loop = asyncio.get_running_loop()
    futures, waiters, helper = [], [], None
    if args.waiters_binary:
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fanout-request-{os.getpid()}"), "wb") as file:
            file.write(request)
        helper = await asyncio.create_subprocess_exec(
            args.waiters_binary, args.host, str(args.port), str(args.clients), file.name,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        if (await helper.stdout.readline()).strip() != b"sent":
            raise SystemExit("the waiters program failed")
        os.unlink(file.name)
    else:
        for start in range(0, args.clients, 250):
            batch = []
            for _ in range(min(250, args.clients - start)):
                done = loop.create_future()
                futures.append(done)
                batch.append(loop.create_connection(lambda done=done: Waiter(request, done), args.host, args.port))
            waiters += [protocol for _, protocol in await asyncio.gather(*batch)]

    async def reconnect_lost():
        """Opens again the connections the server reset while accepting (a full accept backlog)."""
        for index, done in enumerate(futures):
            if done.done() and done.exception() is not None:
                again = loop.create_future()
                futures[index] = again
                _, protocol = await loop.create_connection(lambda: Waiter(request, again), args.host, args.port)
                waiters.append(protocol)

    parked_since = time.monotonic()
    while True:
        await reconnect_lost()
        connection.request("GET", "/metrics")
        metrics = connection.getresponse().read().decode()
        match = re.search(r"(?m)^flagsd_long_poll_waiters (\d+)", metrics)
        if match and int(match.group(1)) >= args.clients:
            break
        if time.monotonic() - parked_since > 60:
            raise SystemExit(f"only {match and match.group(1)} of {args.clients} clients parked after 60 s")
        await asyncio.sleep(0.05)
    rss_parked = rss_kib(args.pid, "VmRSS") if args.pid else None

    body = json.dumps({"rollout": 1000 + base_version, "reason": "fan-out benchmark"}).encode()
    change_done = loop.create_future()
    change = (f"POST /v1/namespaces/{args.namespace}/flags/plugin_switch_point_000_1/rollout HTTP/1.1\r\n"
              f"Host: {args.host}\r\nAuthorization: Bearer {args.token}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    cpu_before = cpu_seconds(args.pid) if args.pid else None
    client_before = time.process_time() + (cpu_seconds(helper.pid) if helper else 0)
    t0 = time.monotonic()
    await loop.create_connection(lambda: Waiter(change, change_done), args.host, args.port)
    if helper:
        results = []
        while (line := (await helper.stdout.readline()).split()) != [b"end"]:
            if not line:
                raise SystemExit("the waiters program ended early")
            results.append((float(line[1]), int(line[2]), int(line[3]), int(line[4])))
    else:
        results = await asyncio.gather(*futures)
    change_time, change_status, _, _ = await change_done
    cpu_used = cpu_seconds(args.pid) - cpu_before if args.pid else None
    client_cpu = time.process_time() + (cpu_seconds(helper.pid) if helper else 0) - client_before
    for waiter in waiters:
        waiter.closing = True
        waiter.transport.close()
    if helper:
        helper.stdin.close()
        await helper.wait()
    latencies = [(at - t0) * 1000 for at, _, _, _ in results]
    statuses = {status for _, status, _, _ in results}
    versions = {version for _, _, version, _ in results}
    print(json.dumps({
        "clients": args.clients, "gzip": args.gzip, "delta": args.delta, "load_client": "c" if helper else "asyncio", "statuses": sorted(statuses), "versions": sorted(v for v in versions if v),
        "base_version": base_version, "bytes_per_response": results[0][3],
        "change_ack_ms": round((change_time - t0) * 1000, 1), "change_status": change_status,
        "p50_ms": round(statistics.median(latencies), 1), "p99_ms": round(percentile(latencies, 99), 1),
        "max_ms": round(max(latencies), 1),
        "server_cpu_ms": round(cpu_used * 1000) if cpu_used is not None else None,
        "client_cpu_ms": round(client_cpu * 1000),
        "server_cpu_us_per_client": round(cpu_used * 1e6 / args.clients, 1) if cpu_used is not None else None,
        "rss_idle_mib": round(rss_before / 1024, 1) if rss_before else None,
        "rss_parked_mib": round(rss_parked / 1024, 1) if rss_parked else None,
        "rss_peak_mib": round(rss_kib(args.pid, "VmHWM") / 1024, 1) if args.pid else None,
    }))


if __name__ == "__main__":
    uvloop.run(main())
