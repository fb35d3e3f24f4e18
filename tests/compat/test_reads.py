"""Tier 3 read views through the published client: offset reads (`queue(...).fetch`) and
partition discovery (`queue(...).changed_since`). The client chunks, pages, restarts a read
that retention overtook and keeps the smallest safeTime; these tests check what it hands
its caller.
"""

from datetime import datetime, timedelta, timezone

from conftest import client, pop, push, unique


async def test_reads_fetch_answers_the_pop_s_offsets_and_leaves_the_queue_untouched():
    async with client() as q:
        queue = unique("fetch")
        await push(q, queue, [{"i": i} for i in range(3)], partition="a", txns=["a0", "a1", "a2"])
        await push(q, queue, [{"i": i} for i in range(3, 5)], partition="a", txns=["a3", "a4"])
        await push(q, queue, [{"j": 0}], partition="b", txns=["b0"])

        got = await q.queue(queue).fetch(["a", "b", "nobody"], offsets={"a": 1})
        again = await q.queue(queue).fetch("a", offsets={"a": 1})
        popped = await pop(q, queue, batch=10, partition="a")

        assert list(got) == ["a", "b", "nobody"]
        a = got["a"]
        assert [r["offset"] for r in a["records"]] == [1, 2, 3, 4]
        assert [r["transactionId"] for r in a["records"]] == ["a1", "a2", "a3", "a4"]
        assert [r["payload"] for r in a["records"]] == [{"i": i} for i in range(1, 5)]
        assert (a["highWatermark"], a["logStartOffset"], a["nextOffset"]) == (5, 0, 5)
        assert got["b"]["records"][0]["payload"] == {"j": 0}
        assert got["nobody"]["records"] == []
        assert again["a"]["records"] == a["records"], "a second reader gets the same answer"
        # No cursor moved: queue mode still pops everything, at the same offsets.
        assert [m["transactionId"] for m in popped] == ["a0", "a1", "a2", "a3", "a4"]
        assert [m.get("offset") for m in popped][1:] == [r["offset"] for r in a["records"]]


async def test_reads_fetch_reads_past_a_small_max_bytes_one_call_at_a_time():
    async with client() as q:
        queue = unique("fetch-small")
        await push(q, queue, [{"pad": "x" * 500, "i": i} for i in range(6)], partition="p")

        got = await q.queue(queue).fetch("p", max_bytes=1)

        assert [r["payload"]["i"] for r in got["p"]["records"]] == list(range(6))


async def test_reads_changed_since_lists_partitions_and_its_safe_time_finds_later_writes():
    async with client() as q:
        queue = unique("changed")
        for p in ("p2", "p1", "p3"):
            await push(q, queue, [{"p": p}], partition=p)

        everything = await q.queue(queue).changed_since()
        unknown = await q.queue(unique("nope")).changed_since()
        await push(q, queue, [{"again": True}], partition="p2")
        later = await q.queue(queue).changed_since(everything["safeTime"])
        future = await q.queue(queue).changed_since(datetime.now(timezone.utc) + timedelta(hours=1))

        names = [p["name"] for p in everything["partitions"]]
        assert sorted(names) == ["p1", "p2", "p3"]
        by_name = {p["name"]: p for p in everything["partitions"]}
        assert by_name["p1"]["lastOffset"] == 0 and by_name["p1"]["logStart"] == 0
        assert unknown["partitions"] == []
        assert "p2" in [p["name"] for p in later["partitions"]]
        assert [p for p in later["partitions"] if p["name"] == "p2"][0]["lastOffset"] == 1
        assert future["partitions"] == []
        assert len(everything["safeTime"]) == len("2026-12-05T12:00:00.000000Z")
