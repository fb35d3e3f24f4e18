"""Tier-2 endpoints through the published client's admin surface: the dead letter queue,
consumer groups (list, detail, seek, delete), resources (queues, queue detail, delete),
the messages listing, status and metrics.
"""

import asyncio

import httpx
import pytest

from conftest import client, configure, data, pop, push, unique


async def nack_until_dead(q, queue: str, txn: str):
    """Pops one message at a time and nacks it while it is `txn`. Returns how many times
    `txn` was delivered and the first other message that came instead (still leased), or
    None when the queue ran dry."""
    deliveries = 0
    for _ in range(10):
        got = await pop(q, queue, batch=1, partitions=1)
        if not got or got[0]["transactionId"] != txn:
            return deliveries, (got[0] if got else None)
        deliveries += 1
        verdict = await q.ack(got[0], False, {"error": f"failure {deliveries}"})
        assert verdict["success"] is True, verdict
    raise AssertionError(f"{txn} was still redelivered after {deliveries} nacks")


async def test_admin_a_message_failing_past_its_retry_limit_is_listed_in_the_dlq_with_its_payload():
    async with client() as q:
        queue = unique("dlq")
        await configure(q, queue, lease_time=30, retry_limit=2)
        await push(q, queue, [{"poison": True}, {"fine": True}], txns=["poison-1", "fine-1"])

        deliveries, next_one = await nack_until_dead(q, queue, "poison-1")
        dlq = await q.queue(queue).dlq().limit(10).get()

        assert 2 <= deliveries <= 4, deliveries
        assert next_one is not None and next_one["data"] == {"fine": True}, next_one
        assert dlq["total"] >= 1, dlq
        [dead] = [m for m in dlq["messages"] if m.get("transactionId") == "poison-1"]
        assert dead["data"] == {"poison": True}, dead
        assert dead.get("errorMessage"), dead
        assert all(m.get("transactionId") != "fine-1" for m in dlq["messages"])


async def test_admin_an_ack_with_status_dlq_files_the_message_in_the_dlq_at_once():
    async with client() as q:
        queue = unique("dlq-now")
        await push(q, queue, [{"reject": "now"}], txns=["reject-now"])

        [message] = await pop(q, queue)
        verdict = await q.ack(message, "dlq", {"error": "rejected by the handler"})
        after = await pop(q, queue)
        dlq = await q.queue(queue).dlq().get()

        assert verdict["success"] is True, verdict
        assert after == []
        assert [m["data"] for m in dlq["messages"] if m.get("transactionId") == "reject-now"] == [{"reject": "now"}], dlq


async def test_admin_retry_delay_holds_a_nacked_message_back_and_dead_letters_off_skip_it():
    async with client() as q:
        queue = unique("retry-delay")
        await configure(q, queue, lease_time=30, retry_limit=1, retry_delay=2000,
                        dead_letter_queue=False)
        await push(q, queue, [{"n": 0}, {"n": 1}], txns=["held-0", "held-1"])

        [first] = await pop(q, queue, batch=1)
        assert (await q.ack(first, False, {"error": "try later"}))["success"] is True
        during = await pop(q, queue, batch=1)
        await asyncio.sleep(2.2)
        [again] = await pop(q, queue, batch=1)
        assert (await q.ack(again, False, {"error": "still broken"}))["success"] is True
        [after] = await pop(q, queue, batch=1)
        dlq = await q.queue(queue).dlq().limit(10).get()

        assert during == [], "redelivered inside the retry delay"
        assert again["transactionId"] == "held-0" and again["deliveryAttempt"] == 2, again
        assert after["transactionId"] == "held-1", "the spent message is skipped"
        assert dlq["total"] == 0, dlq


async def test_admin_a_message_older_than_the_ttl_is_dead_lettered_not_delivered():
    async with client() as q:
        queue = unique("ttl")
        await configure(q, queue, lease_time=30, ttl=2)
        await push(q, queue, [{"stale": True}], txns=["stale-1"])
        await asyncio.sleep(2.3)
        await push(q, queue, [{"fresh": True}], txns=["fresh-1"])

        got = await pop(q, queue, batch=10)
        dlq = await q.queue(queue).dlq().limit(10).get()

        assert data(got) == [{"fresh": True}]
        assert [m["data"] for m in dlq["messages"]] == [{"stale": True}], dlq
        assert dlq["messages"][0].get("errorMessage") == "expired", dlq


async def test_admin_consumer_groups_are_listed_and_detailed_per_queue():
    async with client() as q:
        queue = unique("cg")
        await push(q, queue, [{"n": i} for i in range(3)])
        got = await pop(q, queue, group="analytics", batch=2)
        await q.ack(got, True, {"group": "analytics"})

        listing = await q.admin.list_consumer_groups()
        detail = await q.admin.get_consumer_group("analytics")

        assert isinstance(listing, list), listing
        rows = [r for r in listing if r.get("name") == "analytics" and r.get("queueName") == queue]
        assert len(rows) == 1, listing
        assert queue in detail, detail
        partitions = detail[queue]["partitions"]
        assert [p["partition"] for p in partitions] == ["Default"], partitions
        assert partitions[0]["offsetLag"] == 1, partitions


async def test_admin_seek_to_end_skips_the_backlog_of_a_group():
    async with client() as q:
        queue = unique("seek")
        await push(q, queue, [{"before": 1}])
        first = await pop(q, queue, group="skipper")
        await q.ack(first, True, {"group": "skipper"})
        await push(q, queue, [{"backlog": i} for i in range(5)])

        answer = await q.admin.seek_consumer_group("skipper", queue, {"toEnd": True})
        after_seek = await pop(q, queue, group="skipper", batch=10)
        await push(q, queue, [{"after": 1}])
        fresh = await pop(q, queue, group="skipper", batch=10)
        other = await pop(q, queue, group="untouched", batch=10)

        assert answer.get("success") is True, answer
        assert after_seek == []
        assert data(fresh) == [{"after": 1}]
        assert data(other) == [{"before": 1}] + [{"backlog": i} for i in range(5)] + [{"after": 1}]


async def test_admin_deleting_a_consumer_group_removes_it_from_the_listing():
    async with client() as q:
        queue = unique("cgdel")
        group = unique("doomed")
        await push(q, queue, [{"n": 1}, {"n": 2}])
        got = await pop(q, queue, group=group, batch=1)
        await q.ack(got, True, {"group": group})

        before = await q.admin.list_consumer_groups()
        answer = await q.delete_consumer_group(group)
        after = await q.admin.list_consumer_groups()
        again = await pop(q, queue, group=group, batch=10, mode="all")

        assert any(r.get("name") == group for r in before), before
        assert answer.get("success") is True, answer
        assert not any(r.get("name") == group for r in after), after
        assert data(again) == [{"n": 1}, {"n": 2}], "a re-created group starts over"


async def test_admin_resources_list_and_detail_queues_and_delete_removes_one():
    async with client() as q:
        queue = unique("res")
        await configure(q, queue, lease_time=45)
        await push(q, queue, [{"i": 1}], partition="alpha")
        await push(q, queue, [{"i": 2}, {"i": 3}], partition="beta")

        listing = await q.admin.list_queues()
        detail = await q.admin.get_queue(queue)
        deleted = await q.queue(queue).delete()
        listing_after = await q.admin.list_queues()
        with pytest.raises(httpx.HTTPStatusError) as gone:
            await q.admin.get_queue(queue)

        [row] = [r for r in listing["queues"] if r["name"] == queue]
        assert row["messages"]["total"] == 3, row
        assert detail["name"] == queue, detail
        assert {"alpha", "beta"} <= {p["name"] for p in detail["partitions"]}, detail
        totals = {p["name"]: p["stats"]["total"] for p in detail["partitions"]}
        assert totals.get("alpha") == 1 and totals.get("beta") == 2, detail
        assert deleted.get("deleted") is True, deleted
        assert all(r["name"] != queue for r in listing_after["queues"])
        assert gone.value.response.status_code == 404
        assert await pop(q, queue) == []


async def test_admin_the_messages_listing_shows_pushed_messages_and_the_detail_has_the_payload():
    async with client() as q:
        queue = unique("msgs")
        answers = await push(q, queue, [{"look": "here"}, {"and": "there"}], txns=["m-1", "m-2"])

        listing = await q.admin.list_messages(queue=queue)
        detail = await q.admin.get_message(answers[0]["partitionId"], "m-1")

        assert sorted(m["transactionId"] for m in listing["messages"]) == ["m-1", "m-2"], listing
        assert all(m["queue"] == queue for m in listing["messages"])
        assert detail["payload"] == {"look": "here"}, detail


async def test_admin_status_endpoints_answer_json_that_names_the_queue():
    async with client() as q:
        queue = unique("status")
        await push(q, queue, [{"s": 1}])

        status = await q.admin.get_status()
        queues = await q.admin.get_queue_stats()
        one = await q.admin.get_queue_detail(queue)

        assert isinstance(status, dict) and status, status
        assert queue in str(queues), queues
        assert isinstance(one, dict) and queue in str(one), one


async def test_admin_health_and_metrics_answer_json():
    async with client() as q:
        queue = unique("metrics")
        await push(q, queue, [{"m": 1}])
        await pop(q, queue)

        health = await q.admin.health()
        metrics = await q.admin.metrics()

        assert health["status"] == "healthy", health
        assert health["database"] == "connected", health
        assert isinstance(metrics, dict) and metrics, metrics


async def test_admin_retrying_a_dead_lettered_message_delivers_it_again():
    async with client() as q:
        queue = unique("dlq-retry")
        await push(q, queue, [{"second": "chance"}], txns=["retry-me"])
        [message] = await pop(q, queue)
        await q.ack(message, "dlq", {"error": "parked"})

        answer = await q.admin.retry_message(message["partitionId"], "retry-me")
        again = await pop(q, queue)

        assert not (isinstance(answer, dict) and answer.get("error")), answer
        assert data(again) == [{"second": "chance"}]


async def test_admin_queue_depth_counts_pending_messages_per_partition():
    async with client() as q:
        queue = unique("depth")
        await push(q, queue, [{"d": 1}, {"d": 2}], partition="deep")
        await push(q, queue, [{"d": 3}], partition="shallow")
        got = await pop(q, queue, group="reader", partition="shallow")
        await q.ack(got, True, {"group": "reader"})

        whole = await q.admin.get_queue_depth(queue)
        for_reader = await q.admin.get_queue_depth(queue, group="reader")

        assert whole["queue"] == queue, whole
        assert whole["pending"] == 3, whole
        assert {p["partition"]: p["pending"] for p in whole["partitions"]}.get("deep") == 2, whole
        assert for_reader["pending"] == 2, for_reader
        assert for_reader["partitionsPending"] == 1, for_reader
