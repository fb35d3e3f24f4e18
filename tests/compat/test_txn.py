"""Transactions through the published client: an ack and a push committed together, a
bundle that fails changing nothing, and the binary "QTB1" form the client sends when it
has binary_push and push_compression.
"""

import json

import pytest

from conftest import Recorder, client, configure, data, pop, push, unique

STALE_LEASE = "00000000-0000-4000-8000-000000000000"


async def test_txn_an_ack_and_a_push_commit_together():
    async with client() as q:
        source, sink = unique("txn-src"), unique("txn-sink")
        await configure(q, source, lease_time=30)
        await push(q, source, [{"step": 1}])

        [message] = await pop(q, source)
        result = await (
            q.transaction().ack(message).queue(sink).push([{"data": {"step": 2}, "transactionId": "next-step"}]).commit()
        )
        source_left = await pop(q, source)
        sink_got = await pop(q, sink, batch=10)

        assert result["success"] is True, result
        assert bool(result) is True
        assert source_left == [], "the acked message must not come back"
        assert data(sink_got) == [{"step": 2}]
        assert [m["transactionId"] for m in sink_got] == ["next-step"]


async def test_txn_a_push_into_a_partition_and_acks_of_several_messages_commit_together():
    async with client() as q:
        source, sink = unique("txn-many"), unique("txn-many-sink")
        await push(q, source, [{"i": i} for i in range(3)])

        got = await pop(q, source, batch=10)
        result = await (
            q.transaction().ack(got).queue(sink).partition("east").push([{"data": {"sum": 3}}, {"data": {"count": 3}}]).commit()
        )
        sink_got = await pop(q, sink, partition="east", batch=10)

        assert result["success"] is True, result
        assert data(got) == [{"i": i} for i in range(3)]
        assert await pop(q, source, batch=10) == []
        assert data(sink_got) == [{"sum": 3}, {"count": 3}]


def refused_in_body(recorder: Recorder) -> dict:
    """The broker's answer to the one transaction sent: HTTP 200 carrying success false
    (a 404 from a broker without the route would also make commit() raise)."""
    [sent] = recorder.to("POST", "/api/v1/transaction")
    assert sent["status"] == 200, (sent["status"], sent["answer"][:300])
    answer = json.loads(sent["answer"])
    assert answer["success"] is False and answer.get("error"), answer
    return answer


async def test_txn_a_failing_bundle_changes_nothing():
    recorder = Recorder()
    async with client(transport=recorder) as q:
        source, sink = unique("txn-fail"), unique("txn-fail-sink")
        await configure(q, source, lease_time=30)
        await push(q, source, [{"keep": "me"}])

        [message] = await pop(q, source)
        forged = {**message, "leaseId": STALE_LEASE}
        with pytest.raises(Exception):
            await q.transaction().ack(forged).queue(sink).push([{"data": {"must": "not land"}}]).commit()
        sink_got = await pop(q, sink, batch=10)
        real_ack = await q.ack(message, True)

        refused_in_body(recorder)
        assert sink_got == [], "a rolled-back bundle must not push"
        assert real_ack["success"] is True, "the message must still be held under its real lease"


async def test_txn_a_duplicate_push_inside_a_bundle_is_not_stored_twice():
    recorder = Recorder()
    async with client(transport=recorder) as q:
        sink = unique("txn-dup")
        await push(q, sink, [{"first": True}], txns=["txn-dup-id"])

        # Whether a duplicate inside a bundle is a success or a refusal the contract
        # leaves open; either way the second copy must not be stored.
        try:
            await q.transaction().queue(sink).push([{"data": {"second": True}, "transactionId": "txn-dup-id"}]).commit()
        except Exception:
            pass
        got = await pop(q, sink, batch=10)

        [sent] = recorder.to("POST", "/api/v1/transaction")
        assert sent["status"] == 200, (sent["status"], sent["answer"][:300])
        assert data(got) == [{"first": True}]


async def test_txn_the_binary_bundle_commits_an_ack_and_a_push():
    recorder = Recorder()
    async with client() as plain, client(binary_push=True, push_compression=True, transport=recorder) as q:
        source, sink = unique("qtb-src"), unique("qtb-sink")
        await push(plain, source, [{"step": 1}])

        [message] = await pop(plain, source)
        result = await (
            q.transaction().ack(message).queue(sink).push([{"data": {"step": 2}}, {"data": {"step": 3}}]).commit()
        )
        sink_got = await pop(q, sink, batch=10)

        [sent] = recorder.to("POST", "/api/v1/transaction")
        assert sent["contentType"] == "application/x-queen-push"
        assert sent["body"][:4] == b"QTB1", sent["body"][:8]
        assert result["success"] is True, result
        assert await pop(q, source) == []
        assert data(sink_got) == [{"step": 2}, {"step": 3}]


async def test_txn_a_failing_binary_bundle_changes_nothing():
    recorder = Recorder()
    async with client() as plain, client(binary_push=True, push_compression=True, transport=recorder) as q:
        source, sink = unique("qtb-fail"), unique("qtb-fail-sink")
        await push(plain, source, [{"keep": "me"}])

        [message] = await pop(plain, source)
        forged = {**message, "leaseId": STALE_LEASE}
        with pytest.raises(Exception):
            await q.transaction().ack(forged).queue(sink).push([{"data": {"must": "not land"}}]).commit()
        sink_got = await pop(q, sink, batch=10)
        real_ack = await q.ack(message, True)

        refused_in_body(recorder)
        assert recorder.to("POST", "/api/v1/transaction")[0]["body"][:4] == b"QTB1"
        assert sink_got == []
        assert real_ack["success"] is True


async def test_txn_once_gates_a_step_and_a_second_commit_returns_kv_precondition():
    async with client() as q:
        sink, space = unique("txn-once"), unique("txn-gates")
        first = await q.transaction().once(space, "step-1", ttl_seconds=3600).kv.incr(space, "runs", forever=True).queue(sink).push([{"data": {"n": 1}}]).commit()
        again = await q.transaction().once(space, "step-1", ttl_seconds=3600).kv.incr(space, "runs", forever=True).queue(sink).push([{"data": {"n": 2}}]).commit()
        runs = await q.kv.get(space, "runs")

        assert first["success"] is True, first
        assert [r["type"] for r in first["results"]] == ["push", "kv", "kv"], first
        assert again["success"] is False and again["reason"] == "kv_precondition", again
        assert again["failedIndex"] == 1 and again["kvReason"] == "exists", again
        assert runs["value"] == 1, "the lost bundle's incr must be undone"
        assert data(await pop(q, sink, batch=10)) == [{"n": 1}]


async def test_txn_kv_writes_commit_with_an_ack_and_roll_back_with_a_refused_one():
    async with client() as q:
        source, space = unique("txn-kv-src"), unique("txn-kv")
        await configure(q, source, lease_time=30)
        await push(q, source, [{"step": 1}])
        [message] = await pop(q, source)

        stale = dict(message, leaseId=STALE_LEASE)
        with pytest.raises(Exception):
            await q.transaction().ack(stale).kv.put(space, "state", {"done": True}, forever=True).commit()
        missing = await q.kv.get(space, "state")
        done = await q.transaction().ack(message).kv.put(space, "state", {"done": True}, forever=True).commit()
        state = await q.kv.get(space, "state")

        assert not missing, missing
        assert done["success"] is True, done
        assert state["value"] == {"done": True}
        assert await pop(q, source) == []
