"""Tier 3 durable timers through the published client (`client.timers`, `client.timer(q)`
and `tx.timer(q)`): schedule, reschedule, peek, list and list_all, cancel over the DELETE
route, the fluent builder, the transaction rider, and delivery observed by a pop: the
message carries the promised id, the txn as transactionId and the payload.
"""

import time
from datetime import timedelta

from conftest import client, data, pop, pop_until, unique


async def test_timers_schedule_peek_list_reschedule_and_cancel():
    async with client() as q:
        queue = unique("timers")
        first = await q.timers.schedule(queue, "order/1/expire", {"a": 1}, delay_ms=60_000)
        again = await q.timers.reschedule(queue, "order/1/expire", {"a": 2}, delay=timedelta(minutes=2))
        other = await q.timer(queue).key("order/2").payload("x").after_ms(60_000).schedule()
        peeked = await q.timers.peek(queue, "order/1/expire")
        missing = await q.timers.peek(queue, "order/9")
        page = await q.timers.list(queue, limit=1)
        every = await q.timers.list_all(queue, limit=1)
        cancelled = await q.timers.cancel(queue, "order/1/expire")
        absent = await q.timers.cancel(queue, "order/1/expire", txn="mine")
        fluent = await q.timer(queue).key("order/2").cancel()

        assert first and first["status"] == "scheduled" and first["messageId"] and first["deliverAt"]
        assert again and again["status"] == "rescheduled"
        assert other and other["status"] == "scheduled"
        assert peeked and peeked["found"] is True and peeked["messageId"] == again["messageId"]
        assert not missing
        assert page["truncated"] is True and len(page["rows"]) == 1
        assert [r["timerKey"] for r in every] == ["order/1/expire", "order/2"]
        assert cancelled and cancelled["status"] == "cancelled"
        assert not absent and absent["status"] == "absent" and absent["txn"] == "mine"
        assert fluent and fluent["status"] == "cancelled"


async def test_a_timer_is_delivered_once_with_its_promised_id_and_txn():
    async with client() as q:
        queue = unique("timers-fire")
        scheduled_at = time.monotonic()
        promised = await q.timers.schedule(queue, "k", {"due": True}, delay_ms=500, partition="p1", txn="timer-txn")
        early = await pop(q, queue)
        got = await pop_until(q, queue, 1, seconds=10)
        waited = time.monotonic() - scheduled_at

        assert early == []
        assert data(got) == [{"due": True}]
        assert got[0]["id"] == promised["messageId"]
        assert got[0]["transactionId"] == "timer-txn"
        assert got[0]["partition"] == "p1"
        assert waited >= 0.5


async def test_the_transaction_rider_schedules_with_the_bundle():
    async with client() as q:
        queue = unique("timers-tx")
        side = unique("timers-side")
        committed = await (
            q.transaction()
            .queue(side).push([{"data": {"side": 1}}])
            .timer(queue).key("tx/1").payload({"from": "tx"}).after_ms(0).schedule()
            .commit()
        )
        got = await pop_until(q, queue, 1, seconds=10)

        assert committed
        assert data(got) == [{"from": "tx"}]
