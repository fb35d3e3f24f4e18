"""Tier 3 streams through the published client (`queen.streams`): a map into a sink queue
end to end (every message in the sink exactly once), and a tumbling-window aggregation with
state whose results are checked, including that an open window is not closed early by an
idle flush (the server's `ripe_at_or_before` filter).

The sink is read after the runner stopped, by a group that never read it before.
"""

import asyncio
import time

from conftest import URL, client, push, unique
from queen.streams import Stream


async def until(runner, key: str, want: int, within: float = 30.0) -> None:
    """Waits until the runner's metric `key` reaches `want`."""
    deadline = time.monotonic() + within
    while runner.metrics().get(key, 0) < want and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert runner.metrics().get(key, 0) >= want, runner.metrics()


async def everything(q, queue: str) -> list:
    """Every payload of `queue`, through a fresh group (auto-ack), until a pop is empty."""
    group, got = unique("read"), []
    while True:
        batch = await q.queue(queue).group(group).batch(1000).wait(False).auto_ack(True).pop()
        if not batch:
            return got
        got.extend(m["data"] for m in batch)


async def test_streams_map_to_a_sink_delivers_every_message_exactly_once():
    async with client() as q:
        src, sink = unique("st-src"), unique("st-sink")
        for p in range(3):
            await push(q, src, [{"n": p * 100 + i} for i in range(40)], partition=f"p{p}")
        errors: list = []
        runner = await (
            Stream.from_(q.queue(src))
            .map(lambda m: {"doubled": m["data"]["n"] * 2})
            .to(q.queue(sink))
            .run(query_id=unique("map"), url=URL, batch_size=25, max_partitions=2,
                 max_wait_millis=500, on_error=lambda e, ctx=None: errors.append(e))
        )
        try:
            await until(runner, "pushItemsTotal", 120)
            await asyncio.sleep(1.0)  # any cycle beyond the 120 would land now
        finally:
            await runner.stop()
        got = await everything(q, sink)
        want = sorted(2 * (p * 100 + i) for p in range(3) for i in range(40))
        assert sorted(m["doubled"] for m in got) == want, (len(got), errors)
        assert runner.metrics()["messagesTotal"] == 120, runner.metrics()
        assert errors == [], errors


async def test_streams_tumbling_window_aggregates_with_state_and_keeps_open_windows():
    async with client() as q:
        src, sink = unique("st-win"), unique("st-agg")
        # Two batches, so the first window's state is carried across cycles by the
        # server; then a late batch whose watermark (5000) closes [0, 1000) and
        # [1000, 2000) and leaves [5000, 6000) open.
        runner = await (
            Stream.from_(q.queue(src))
            .window_tumbling(seconds=1, event_time=lambda m: m["data"]["ts"],
                             idle_flush_ms=200)
            .aggregate({"count": lambda d: 1, "sum": lambda d: d["v"],
                        "max": lambda d: d["v"]})
            .to(q.queue(sink))
            .run(query_id=unique("win"), url=URL, batch_size=100, max_wait_millis=200)
        )
        try:
            await push(q, src, [{"ts": 100, "v": 1}, {"ts": 400, "v": 2}], partition="only")
            await until(runner, "messagesTotal", 2)
            await push(q, src, [{"ts": 900, "v": 3}, {"ts": 1200, "v": 10},
                                {"ts": 1800, "v": 20}], partition="only")
            await until(runner, "messagesTotal", 5)
            await push(q, src, [{"ts": 5000, "v": 7}], partition="only")
            await until(runner, "messagesTotal", 6)
            await until(runner, "pushItemsTotal", 2)
            # Several idle flushes pass: the open window must stay open.
            flushes = runner.metrics().get("flushCyclesTotal", 0)
            await asyncio.sleep(1.5)
        finally:
            await runner.stop()
        got = await everything(q, sink)
        results = sorted((r["count"], r["sum"], r["max"]) for r in got)
        assert results == [(2, 30, 20), (3, 6, 3)], (got, runner.metrics())
        assert runner.metrics()["errorsTotal"] == 0, runner.metrics()
        del flushes
