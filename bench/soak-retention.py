#!/usr/bin/env python3
"""Retention soak: push and consume steadily with retention on, and print the tables'
sizes every minute; they must level off, not climb.

Starts the broker given as argv[1] (default target/release/queen) on its embedded
PostgreSQL in a temporary folder, with a sweeper every 5 s. One queue, 8 partitions,
completedRetentionSeconds 30 and retentionSeconds 120; a producer pushes 40 messages of
~300 bytes every 50 ms (about 800 msg/s), a queue-mode consumer and a consumer group pop
and ack. Python standard library only.

    python3 bench/soak-retention.py target/release/queen 600   # 10 minutes
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

BINARY = sys.argv[1] if len(sys.argv) > 1 else "target/release/queen"
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 600
QUEUE = "soak"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"


def call(method, path, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)


stop = threading.Event()
counts = {"pushed": 0, "queue_mode": 0, "group": 0, "errors": 0}


def producer():
    n = 0
    pad = "x" * 250
    while not stop.is_set():
        items = [{"queue": QUEUE, "partition": f"p{(n + k) % 8}",
                  "payload": {"n": n + k, "pad": pad}} for k in range(40)]
        try:
            call("POST", "/api/v1/push", {"items": items})
            counts["pushed"] += len(items)
            n += len(items)
        except Exception:
            counts["errors"] += 1
        time.sleep(0.05)


def consumer(group, key):
    q = f"&consumerGroup={group}" if group else ""
    while not stop.is_set():
        try:
            status, body = call(
                "GET", f"/api/v1/pop/queue/{QUEUE}?batch=200&partitions=4&wait=true&timeout=1000{q}")
            if status != 200:
                continue
            msgs = body["messages"]
            acks = [{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                     "leaseId": m["leaseId"], "status": "completed"} for m in msgs]
            call("POST", "/api/v1/ack/batch", {"acknowledgments": acks, "consumerGroup": group})
            counts[key] += len(msgs)
        except Exception:
            counts["errors"] += 1


def main():
    folder = tempfile.mkdtemp(prefix="queen-soak-")
    os.chmod(folder, 0o777)
    env = dict(os.environ, PORT=str(PORT), QUEEN_DATA_DIR=os.path.join(folder, "data"),
               QUEEN_EMBEDDED_PG_PORT=str(free_port()), QUEEN_MESH_PORT=str(free_port()),
               QUEEN_RETENTION_INTERVAL_MS="5000", RUST_LOG="warn")
    log = open(os.path.join(folder, "broker.log"), "w")
    broker = subprocess.Popen([BINARY], env=env, stdout=log, stderr=log)
    try:
        for _ in range(600):
            try:
                call("GET", "/health", timeout=2)
                break
            except Exception:
                time.sleep(0.5)
        call("POST", "/api/v1/configure", {"queue": QUEUE, "options": {
            "completedRetentionSeconds": 30, "retentionSeconds": 120}})
        threads = [threading.Thread(target=producer),
                   threading.Thread(target=consumer, args=(None, "queue_mode")),
                   threading.Thread(target=consumer, args=("analytics", "group"))]
        for t in threads:
            t.start()
        started = time.time()
        tables = ["log_segments", "log_consumers", "log_partitions", "dead_letters", "dedup"]
        print("minute  pushed  consumed(qm/group)  removed(segments, MB)  " +
              "  ".join(f"{t}(kB)" for t in tables), flush=True)
        minute = 0
        while time.time() - started < SECONDS:
            time.sleep(max(0.0, started + 60 * (minute + 1) - time.time()))
            minute += 1
            _, m = call("GET", "/metrics")
            r = m["retention"]
            sizes = r.get("tables") or {}
            print(f"{minute:>6}  {counts['pushed']:>6}  {counts['queue_mode']:>8}/{counts['group']:<8}  "
                  f"{r['removed']['segments']:>10}, {r['removed']['bytes'] / 1e6:>7.1f}  " +
                  "  ".join(f"{sizes.get(t, 0) // 1024:>{len(t) + 4}}" for t in tables),
                  flush=True)
        stop.set()
        for t in threads:
            t.join()
        print(f"errors: {counts['errors']}", flush=True)
    finally:
        broker.terminate()
        broker.wait(timeout=60)


if __name__ == "__main__":
    main()
