"""The same tier-3 client calls against one broker, timed: timers, streams and ephemeral
queues through the published `queen-mq` client, as a user's program makes them.

`bench/tier3-peer.sh` runs it against this broker and the public peer server alternately on
one machine; run alone it measures whatever broker `--url` names:

    target/tmp/compat-venv/bin/python bench/tier3-peer.py --url http://127.0.0.1:6632

Every figure is a wall-clock time seen by the client, so the client's own cost is in both
brokers' figures alike. It prints one JSON object per measure (`--json`) or a table.
"""

import argparse
import asyncio
import json
import statistics
import time
import uuid
from datetime import datetime, timezone

from queen import Queen
from queen.streams import Stream
from queen.timers import ops as timer_ops


def quantile(values, q):
    """The q-quantile of values (nearest rank); None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def figure(name, latencies_ms, count=None, seconds=None, **extra):
    """One measure: p50/p99 of per-call latencies and, when given, a rate."""
    out = {"measure": name, "calls": len(latencies_ms)}
    if latencies_ms:
        out["p50_ms"] = round(quantile(latencies_ms, 0.50), 2)
        out["p99_ms"] = round(quantile(latencies_ms, 0.99), 2)
    if count is not None and seconds:
        out["per_s"] = round(count / seconds, 1)
    out.update(extra)
    return out


def unique(prefix):
    """A name no other run uses, so runs never see each other's messages."""
    return f"peer-{prefix}-{uuid.uuid4().hex[:10]}"


async def timed(call):
    """Runs one awaitable and answers (result, milliseconds)."""
    started = time.perf_counter()
    result = await call
    return result, (time.perf_counter() - started) * 1000.0


async def timers_ops(q, calls):
    """Schedule, peek and cancel one timer per call, then batches of 100 schedules."""
    queue = unique("tm")
    schedule, peek, cancel = [], [], []
    for i in range(calls):
        _, ms = await timed(q.timers.schedule(queue, f"k/{i}", {"i": i}, delay_ms=600_000))
        schedule.append(ms)
    for i in range(calls):
        _, ms = await timed(q.timers.peek(queue, f"k/{i}"))
        peek.append(ms)
    for i in range(calls):
        answer, ms = await timed(q.timers.cancel(queue, f"k/{i}"))
        assert answer and answer["status"] == "cancelled", answer
        cancel.append(ms)
    batches, started = [], time.perf_counter()
    for b in range(calls // 10):
        ops = [timer_ops.schedule(queue, f"b/{b}/{i}", {"i": i}, delay_ms=600_000)
               for i in range(100)]
        answers, ms = await timed(q.timers.batch(ops))
        assert len(answers) == 100 and all(a["status"] == "scheduled" for a in answers)
        batches.append(ms)
    elapsed = time.perf_counter() - started
    return [figure("timers.schedule", schedule), figure("timers.peek", peek),
            figure("timers.cancel", cancel),
            figure("timers.schedule_batch100", batches, count=100 * len(batches),
                   seconds=elapsed)]


def parse_instant(text):
    """A deliverAt as seconds since the epoch."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc).timestamp()


async def timers_lateness(q, count, within_s):
    """Schedules `count` timers due 1-2 s ahead and long-pops them: lateness = arrival - due."""
    queue = unique("late")
    due = {}
    for i in range(count):
        answer = await q.timers.schedule(queue, f"t/{i}", {"i": i}, delay_ms=1000 + (i * 997) % 1000)
        due[answer["messageId"]] = parse_instant(answer["deliverAt"])
    lateness, seen, deadline = [], set(), time.time() + within_s
    while len(seen) < count and time.time() < deadline:
        batch = await q.queue(queue).group("late").batch(100).wait(True).timeout_millis(1000) \
            .subscription_mode("all").commit_on_delivery(True).pop()
        now = time.time()
        for message in batch or []:
            if message["id"] in due and message["id"] not in seen:
                seen.add(message["id"])
                lateness.append((now - due[message["id"]]) * 1000.0)
    return [figure("timers.lateness", lateness, delivered=len(seen), scheduled=count,
                   min_ms=round(min(lateness), 2) if lateness else None)]


async def streams_map(q, url, messages, within_s):
    """A map stream from a source queue into a sink: messages a second through the runner."""
    src, sink = unique("st-src"), unique("st-sink")
    for p in range(4):
        items = [{"data": {"n": p * messages + i}} for i in range(messages // 4)]
        for start in range(0, len(items), 500):
            await q.queue(src).partition(f"p{p}").push(items[start:start + 500])
    started, errors = time.perf_counter(), []
    runner = await (Stream.from_(q.queue(src)).map(lambda m: {"x": m["data"]["n"] * 2})
                    .to(q.queue(sink))
                    .run(query_id=unique("map"), url=url, batch_size=100, max_partitions=4,
                         max_wait_millis=200, subscription_mode="all",
                         on_error=lambda error, ctx=None: errors.append(repr(error))))
    try:
        deadline = time.monotonic() + within_s
        while runner.metrics().get("pushItemsTotal", 0) < messages and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        elapsed = time.perf_counter() - started
        done = runner.metrics().get("pushItemsTotal", 0)
    finally:
        await runner.stop()
    return [figure("streams.map", [], count=done, seconds=elapsed, delivered=done,
                   pushed=messages, errors=len(errors), first_error=errors[0] if errors else None)]


async def ephemeral_ops(q, rounds):
    """push 10 + pop 10 + ack 10 as one round, and a push's wake of a parked pop."""
    queue = unique("eph")
    await q.ephemeral.configure(queue, lease_seconds=30)
    push_ms, pop_ms, ack_ms, started = [], [], [], time.perf_counter()
    for r in range(rounds):
        _, ms = await timed(q.ephemeral.push(queue, [{"r": r, "i": i} for i in range(10)],
                                             partition="p"))
        push_ms.append(ms)
        got, ms = await timed(q.ephemeral.pop(queue, batch=10, group="g", partition="p"))
        pop_ms.append(ms)
        assert len(got["messages"]) == 10, got
        answer, ms = await timed(q.ephemeral.ack(queue, [m["id"] for m in got["messages"]],
                                                 group="g"))
        ack_ms.append(ms)
    elapsed = time.perf_counter() - started
    wake_ms = []
    for r in range(max(20, rounds // 10)):
        parked = asyncio.ensure_future(q.ephemeral.pop(queue, group="w", wait=True,
                                                       timeout=5000, auto_ack=True,
                                                       partition="w"))
        await asyncio.sleep(0.02)
        started_push = time.perf_counter()
        await q.ephemeral.push(queue, [{"wake": r}], partition="w")
        got = await parked
        wake_ms.append((time.perf_counter() - started_push) * 1000.0)
        assert len(got["messages"]) == 1, got
    return [figure("ephemeral.push10", push_ms), figure("ephemeral.pop10", pop_ms),
            figure("ephemeral.ack10", ack_ms),
            figure("ephemeral.round10", [], count=10 * rounds, seconds=elapsed),
            figure("ephemeral.push_to_parked_pop", wake_ms)]


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--label", default="broker")
    parser.add_argument("--calls", type=int, default=300, help="timed calls per timer op")
    parser.add_argument("--late", type=int, default=200, help="timers whose lateness is taken")
    parser.add_argument("--late-within", type=float, default=30.0,
                        help="seconds the lateness phase waits for its timers")
    parser.add_argument("--stream-messages", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=300, help="ephemeral rounds")
    parser.add_argument("--only", default="timers,lateness,streams,ephemeral")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    wanted = set(args.only.split(","))
    results = []
    async with Queen(url=args.url, retry_attempts=1) as q:
        for name, run in [("timers", lambda: timers_ops(q, args.calls)),
                          ("lateness", lambda: timers_lateness(q, args.late, args.late_within)),
                          ("streams", lambda: streams_map(q, args.url, args.stream_messages, 60)),
                          ("ephemeral", lambda: ephemeral_ops(q, args.rounds))]:
            if name not in wanted:
                continue
            try:
                results.extend(await run())
            except Exception as error:  # a broker that fails a call: say which, go on
                results.append({"measure": name, "error": f"{type(error).__name__}: {error}"})
    for row in results:
        row["broker"] = args.label
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
