"""Core data path through the published client: configure, push, pop, consume, ack, nack,
lease renewal, partitions, consumer groups, subscription modes and long-poll.

Every assertion checks what came back (payloads, order, counts, ids), not only that no
exception was raised.
"""

import asyncio
import re
import time

import httpx

from queen import Queen

from conftest import URL, client, configure, data, pop, pop_until, push, unique

# The contract's createdAt: UTC, milliseconds, a Z.
CREATED_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


async def test_core_configure_answers_without_error_and_pop_returns_pushed_payloads_in_order():
    async with client() as q:
        queue = unique("order")
        await configure(q, queue, lease_time=30, retry_limit=3)

        payloads = [{"n": i, "text": f"message {i}", "nested": {"list": [i, i + 1]}} for i in range(5)]
        answers = await push(q, queue, payloads, txns=[f"tx-{i}" for i in range(5)])
        got = await pop(q, queue, batch=10)

        assert [a.get("transactionId") for a in answers] == [f"tx-{i}" for i in range(5)]
        assert data(got) == payloads
        assert [m["transactionId"] for m in got] == [f"tx-{i}" for i in range(5)]
        for m in got:
            assert isinstance(m["partitionId"], str) and m["partitionId"], m
            assert m["leaseId"], m
            assert m["partition"] == "Default", m
        assert len({m["leaseId"] for m in got}) == 1
        for m in got:
            assert CREATED_AT.fullmatch(m["createdAt"]), m["createdAt"]
            assert m["deliveryAttempt"] == 1, m
        offsets = [m["offset"] for m in got]
        assert offsets == list(range(offsets[0], offsets[0] + 5)), offsets


async def test_core_single_push_then_the_same_transaction_id_again_is_a_duplicate():
    async with client() as q:
        queue = unique("dup")
        seen_duplicates = []

        async def on_duplicate(items, _error):
            seen_duplicates.extend(items)

        first = await q.queue(queue).push({"data": {"v": 1}, "transactionId": "same-txn"})
        again = await q.queue(queue).push({"data": {"v": 2}, "transactionId": "same-txn"}).on_duplicate(on_duplicate)
        got = await pop(q, queue, batch=10)

        assert [a["status"] for a in first] == ["queued"]
        assert [a["status"] for a in again] == ["duplicate"]
        assert [d["transactionId"] for d in seen_duplicates] == ["same-txn"]
        assert data(got) == [{"v": 1}]


async def test_core_a_batch_repeating_a_transaction_id_stores_the_first_occurrence_only():
    async with client() as q:
        queue = unique("dupbatch")

        answers = await q.queue(queue).push(
            [
                {"data": "a", "transactionId": "t-a"},
                {"data": "b", "transactionId": "t-b"},
                {"data": "a-again", "transactionId": "t-a"},
            ]
        )
        got = await pop(q, queue, batch=10)

        assert [a["status"] for a in answers] == ["queued", "queued", "duplicate"]
        assert data(got) == ["a", "b"]


async def test_core_payloads_of_every_json_type_come_back_unchanged():
    async with client() as q:
        queue = unique("types")
        payloads = [{"k": "v"}, [1, 2, 3], "plain string", 42, 3.5, True, None, {"unicode": "zoë ☃ 日本"}]

        await push(q, queue, payloads)
        got = await pop(q, queue, batch=20)

        assert data(got) == payloads


async def test_core_consume_with_a_batch_handler_processes_every_message_exactly_once():
    async with client() as q:
        queue = unique("consume")
        payloads = [{"n": i} for i in range(20)]
        await push(q, queue, payloads)
        handled = []

        async def handler(messages):
            handled.extend(messages if isinstance(messages, list) else [messages])

        await q.queue(queue).batch(5).limit(20).idle_millis(5000).timeout_millis(1000).consume(handler)
        left = await pop(q, queue, batch=100)

        assert data(handled) == payloads
        assert len({m["transactionId"] for m in handled}) == 20
        assert left == [], "every consumed message was acked by the consume loop"


async def test_core_consume_each_with_concurrency_two_handles_every_message_once():
    async with client() as q:
        queue = unique("each")
        for partition in ("p0", "p1", "p2", "p3"):
            await push(q, queue, [{"p": partition, "i": i} for i in range(5)], partition=partition)
        handled = []

        async def handler(message):
            handled.append(message)

        await (
            q.queue(queue).concurrency(2).batch(5).each().limit(20)
            .idle_millis(3000).timeout_millis(1000).consume(handler)
        )
        left = await pop(q, queue, batch=100)

        assert sorted((m["data"]["p"], m["data"]["i"]) for m in handled) == sorted(
            (p, i) for p in ("p0", "p1", "p2", "p3") for i in range(5)
        )
        for partition in ("p0", "p1", "p2", "p3"):
            assert [m["data"]["i"] for m in handled if m["data"]["p"] == partition] == list(range(5))
        assert left == []


async def test_core_ack_completed_removes_the_message_and_a_failing_handler_gets_it_again():
    async with client() as q:
        queue = unique("consume-nack")
        await configure(q, queue, lease_time=30, retry_limit=5)
        await push(q, queue, [{"job": 1}])
        attempts = []

        async def handler(message):
            attempts.append(message)
            if len(attempts) == 1:
                raise RuntimeError("first attempt fails")

        await q.queue(queue).batch(1).each().limit(2).idle_millis(5000).timeout_millis(1000).consume(handler)
        left = await pop(q, queue)

        assert data(attempts) == [{"job": 1}, {"job": 1}]
        assert attempts[0]["transactionId"] == attempts[1]["transactionId"]
        assert left == []


async def test_core_ack_completed_answers_success_and_the_queue_is_then_empty():
    async with client() as q:
        queue = unique("ack")
        await push(q, queue, [{"a": 1}, {"a": 2}])

        got = await pop(q, queue, batch=10)
        verdict = await q.ack(got, True)
        left = await pop(q, queue, batch=10)

        assert data(got) == [{"a": 1}, {"a": 2}]
        assert verdict["success"] is True, verdict
        assert left == []


async def test_core_single_ack_answers_success_and_a_second_ack_with_the_released_lease_is_refused():
    async with client() as q:
        queue = unique("ack1")
        await push(q, queue, [{"only": True}])

        [message] = await pop(q, queue)
        first = await q.ack(message, True)
        second = await q.ack(message, True)

        assert first["success"] is True, first
        assert second["success"] is False, second


async def test_core_nack_redelivers_the_same_message_with_a_higher_delivery_attempt():
    async with client() as q:
        queue = unique("nack")
        await configure(q, queue, lease_time=30, retry_limit=5)
        await push(q, queue, [{"work": "x"}], txns=["nack-me"])

        [first] = await pop(q, queue)
        verdict = await q.ack(first, False, {"error": "handler failed"})
        [again] = await pop(q, queue)

        assert verdict["success"] is True, verdict
        assert again["transactionId"] == "nack-me"
        assert again["data"] == {"work": "x"}
        assert again["deliveryAttempt"] > first["deliveryAttempt"], (first, again)
        assert again["leaseId"] != first["leaseId"]


async def test_core_nack_rewinds_to_the_failed_message_and_later_ones_come_again():
    async with client() as q:
        queue = unique("rewind")
        await configure(q, queue, lease_time=30, retry_limit=5)
        await push(q, queue, [0, 1, 2, 3])

        got = await pop(q, queue, batch=10)
        await q.ack(got[:2], True)
        await q.ack(got[2], False, {"error": "third failed"})
        again = await pop(q, queue, batch=10)

        assert data(got) == [0, 1, 2, 3]
        assert data(again) == [2, 3]


async def test_core_renewing_the_lease_keeps_the_message_from_being_redelivered():
    async with client() as q:
        queue = unique("renew")
        # Renewed every ~0.5 s against a 3 s lease: slack for a loaded CI machine.
        await configure(q, queue, lease_time=3, retry_limit=5)
        await push(q, queue, [{"long": "job"}])

        [held] = await pop(q, queue)
        renewals = []
        stolen = []
        deadline = time.monotonic() + 7  # past two lease lengths
        while time.monotonic() < deadline:
            renewals.append(await q.renew(held))
            stolen.extend(await pop(q, queue, wait=True, timeout_millis=500))
        final = await q.ack(held, True)

        assert all(r["success"] is True for r in renewals), renewals
        assert all(r.get("newExpiresAt") for r in renewals), renewals
        assert stolen == [], "a renewed lease must keep the message away from other pops"
        assert final["success"] is True, final


async def test_core_the_consume_loops_lease_renewal_outlives_a_slow_handler():
    async with client() as q, client() as rival:
        queue = unique("renew-consume")
        await configure(q, queue, lease_time=2, retry_limit=5)
        await push(q, queue, [{"slow": "job"}])
        handled = []
        stolen = []

        async def slow_handler(message):
            handled.append(message)
            deadline = time.monotonic() + 5  # two and a half lease lengths
            while time.monotonic() < deadline:
                stolen.extend(await pop(rival, queue, wait=True, timeout_millis=500))

        await (
            q.queue(queue).batch(1).each().renew_lease(True, 500).limit(1)
            .idle_millis(5000).timeout_millis(1000).consume(slow_handler)
        )
        left = await pop(q, queue)

        assert data(handled) == [{"slow": "job"}]
        assert stolen == [], "the consume loop's renewals must keep the message leased"
        assert left == [], "the handler's success acked it under the renewed lease"


async def test_core_without_renewal_an_expired_lease_gives_the_message_to_the_next_pop():
    async with client() as q:
        queue = unique("expire")
        await configure(q, queue, lease_time=1, retry_limit=5)
        await push(q, queue, [{"abandoned": True}], txns=["lost-consumer"])

        [first] = await pop(q, queue)
        again = await pop_until(q, queue, 1, seconds=15)

        assert [m["transactionId"] for m in again] == ["lost-consumer"]
        assert again[0]["deliveryAttempt"] > first["deliveryAttempt"]


async def test_core_renewing_a_released_lease_answers_success_false():
    async with client() as q:
        queue = unique("renew-gone")
        await push(q, queue, [1])

        [message] = await pop(q, queue)
        await q.ack(message, True)
        outcome = await q.renew(message)

        assert outcome["success"] is False, outcome


async def test_core_each_partition_keeps_its_own_order():
    async with client() as q:
        queue = unique("parts")
        for i in range(5):
            await push(q, queue, [{"p": "a", "i": i}], partition="pa")
            await push(q, queue, [{"p": "b", "i": i}], partition="pb")

        only_a = await pop(q, queue, partition="pa", batch=10)
        only_b = await pop(q, queue, partition="pb", batch=10)

        assert data(only_a) == [{"p": "a", "i": i} for i in range(5)]
        assert data(only_b) == [{"p": "b", "i": i} for i in range(5)]
        assert {m["partition"] for m in only_a} == {"pa"}
        assert {m["partition"] for m in only_b} == {"pb"}
        assert only_a[0]["partitionId"] != only_b[0]["partitionId"]


async def test_core_a_leased_partition_is_skipped_and_the_other_partition_is_served():
    async with client() as q:
        queue = unique("skip")
        await push(q, queue, [{"p": "a"}], partition="pa")
        await push(q, queue, [{"p": "b"}], partition="pb")

        first = await pop(q, queue, batch=10, partitions=1)
        second = await pop(q, queue, batch=10, partitions=1)
        third = await pop(q, queue, batch=10, partitions=1)

        assert sorted(m["data"]["p"] for m in first + second) == ["a", "b"]
        assert len(first) == 1 and len(second) == 1
        assert third == []


async def test_core_two_consumer_groups_each_see_every_message():
    async with client() as q:
        queue = unique("groups")
        payloads = [{"n": i} for i in range(4)]
        await push(q, queue, payloads)

        g1 = await pop(q, queue, group="g1", batch=10)
        await q.ack(g1, True, {"group": "g1"})
        g2 = await pop(q, queue, group="g2", batch=10, mode="all")
        await q.ack(g2, True, {"group": "g2"})
        queue_mode = await pop(q, queue, batch=10)
        g1_again = await pop(q, queue, group="g1", batch=10)

        assert data(g1) == payloads
        assert data(g2) == payloads
        assert data(queue_mode) == payloads
        assert g1_again == []
        assert {m.get("consumerGroup") for m in g1} == {"g1"}


async def test_core_a_consume_loop_in_a_group_acks_for_that_group_only():
    async with client() as q:
        queue = unique("group-consume")
        payloads = [{"n": i} for i in range(6)]
        await push(q, queue, payloads)
        handled = []

        async def handler(messages):
            handled.extend(messages if isinstance(messages, list) else [messages])

        await q.queue(queue).group("workers").batch(3).limit(6).idle_millis(5000).timeout_millis(1000).consume(handler)
        group_left = await pop(q, queue, group="workers", batch=10)
        other_group = await pop(q, queue, group="auditors", batch=10)

        assert data(handled) == payloads
        assert group_left == []
        assert data(other_group) == payloads


async def test_core_subscription_mode_new_skips_messages_pushed_before_the_group_registered():
    async with client() as q:
        queue = unique("subnew")
        await push(q, queue, [{"old": i} for i in range(3)])

        registered = await pop(q, queue, group="late", mode="new")
        await push(q, queue, [{"new": i} for i in range(2)])
        got = await pop_until(q, queue, 2, group="late", mode="new")
        everything = await pop(q, queue, group="from-start", mode="all", batch=10)

        assert registered == []
        assert data(got) == [{"new": 0}, {"new": 1}]
        assert data(everything) == [{"old": i} for i in range(3)] + [{"new": i} for i in range(2)]


async def test_core_a_waiting_pop_returns_a_message_pushed_while_it_waits():
    async with client() as consumer, client() as producer:
        queue = unique("longpoll")
        await configure(consumer, queue)

        started = time.monotonic()
        waiting = asyncio.create_task(pop(consumer, queue, wait=True, timeout_millis=20000))
        await asyncio.sleep(0.5)  # let the pop park before the push (ordering, not a wait for state)
        await push(producer, queue, [{"late": "arrival"}])
        got = await waiting
        elapsed = time.monotonic() - started

        assert data(got) == [{"late": "arrival"}]
        assert elapsed < 10, f"the long-poll answered after {elapsed:.1f}s, not when the push landed"


async def test_core_a_waiting_pop_on_an_empty_queue_answers_empty_after_its_timeout():
    async with client() as q:
        queue = unique("timeout")

        started = time.monotonic()
        got = await pop(q, queue, wait=True, timeout_millis=1000)
        elapsed = time.monotonic() - started

        assert got == []
        assert 0.8 <= elapsed < 5, elapsed


async def test_core_pop_of_an_unknown_queue_is_empty_not_an_error():
    async with client() as q:
        result = await q.queue(unique("nowhere")).batch(5).wait(False).pop_result()

        assert result.messages == []


async def test_core_a_namespace_and_task_pop_serves_the_queue_configured_with_them():
    async with client() as q:
        queue, namespace, task = unique("nt"), unique("ns"), unique("task")
        answer = await q.queue(queue).namespace(namespace).task(task).config({"lease_time": 30}).create()
        await push(q, queue, [{"nt": 1}, {"nt": 2}])

        got = await q.queue().namespace(namespace).task(task).batch(10).wait(False).pop()

        assert not (isinstance(answer, dict) and answer.get("error")), answer
        assert data(got) == [{"nt": 1}, {"nt": 2}]


async def test_core_commit_on_delivery_hands_messages_out_once_without_a_lease():
    async with client() as q:
        queue = unique("autoack")
        await push(q, queue, [{"once": 1}, {"once": 2}])

        got = await q.queue(queue).batch(10).wait(False).commit_on_delivery().pop()
        again = await pop(q, queue, batch=10)

        assert data(got) == [{"once": 1}, {"once": 2}]
        assert all(not m.get("leaseId") for m in got), got
        assert again == []


async def test_core_subscription_from_now_starts_a_new_group_after_the_backlog():
    async with client() as q:
        queue = unique("subnow")
        await push(q, queue, [{"old": 1}])

        registered = await q.queue(queue).group("now-group").subscription_from("now").batch(10).wait(False).pop()
        await push(q, queue, [{"new": 1}])
        got = await q.queue(queue).group("now-group").subscription_from("now").batch(10).wait(False).pop()

        assert registered == []
        assert data(got) == [{"new": 1}]


async def test_core_a_multi_partition_pop_claims_several_partitions_under_one_lease():
    async with client() as q:
        queue = unique("multi")
        await configure(q, queue, lease_time=30)
        for name in ("m1", "m2", "m3"):
            await push(q, queue, [{"p": name, "i": i} for i in range(2)], partition=name)

        got = await pop(q, queue, batch=100, partitions=3)
        renewed = await q.renew(got[0])
        verdict = await q.ack(got, True)
        left = await pop(q, queue, batch=100, partitions=3)

        assert sorted((m["data"]["p"], m["data"]["i"]) for m in got) == [
            (p, i) for p in ("m1", "m2", "m3") for i in range(2)
        ]
        assert len({m["leaseId"] for m in got}) == 1
        assert len({m["partitionId"] for m in got}) == 3
        assert renewed["success"] is True, renewed
        assert renewed.get("renewed") in (None, 3), renewed
        assert verdict["success"] is True, verdict
        assert left == []


async def test_core_delayed_processing_hides_a_message_until_its_delay_passed():
    async with client() as q:
        queue = unique("delay")
        await configure(q, queue, delayed_processing=2)
        pushed_at = time.monotonic()
        await push(q, queue, [{"later": True}])

        early = await pop(q, queue)
        got = await pop_until(q, queue, 1, seconds=15)
        waited = time.monotonic() - pushed_at

        assert early == []
        assert data(got) == [{"later": True}]
        assert waited >= 1.5, waited


async def test_core_a_base_url_with_a_trailing_slash_still_reaches_every_route():
    async with Queen(url=URL + "/", retry_attempts=1) as q:
        queue = unique("slash")
        answers = await q.queue(queue).push([{"data": {"slash": True}}])
        got = await pop(q, queue)
        verdict = await q.ack(got, True)

        assert [a["status"] for a in answers] == ["queued"]
        assert data(got) == [{"slash": True}]
        assert verdict["success"] is True, verdict


async def test_core_a_buffered_push_lands_every_message_in_order_on_flush():
    async with client() as q:
        queue = unique("buffered")
        builder = q.queue(queue).buffer({"message_count": 100, "time_millis": 60000})
        for i in range(7):
            await builder.push([{"data": {"b": i}}])

        await q.flush_all_buffers()
        got = await pop(q, queue, batch=20)

        assert data(got) == [{"b": i} for i in range(7)]


async def test_core_a_failing_batch_handler_nacks_the_whole_batch_for_redelivery():
    async with client() as q:
        queue = unique("batchnack")
        await configure(q, queue, lease_time=30, retry_limit=5)
        await push(q, queue, [{"n": i} for i in range(3)])
        rounds = []

        async def handler(messages):
            rounds.append(messages if isinstance(messages, list) else [messages])
            if len(rounds) == 1:
                raise RuntimeError("the whole batch fails once")

        await q.queue(queue).batch(3).limit(6).idle_millis(5000).timeout_millis(1000).consume(handler)
        left = await pop(q, queue, batch=10)

        assert [data(r) for r in rounds] == [[{"n": i} for i in range(3)]] * 2
        assert left == []


async def test_core_names_with_spaces_survive_path_and_query_encoding():
    async with client() as q:
        # The client puts queue and partition names raw in the path (httpx turns a space
        # into %20) and the group in a form-encoded query (a space becomes +).
        queue, partition, group = unique("spaced queue"), "east side", "night shift"
        await push(q, queue, [{"spaced": 1}, {"spaced": 2}], partition=partition)

        got = await pop(q, queue, partition=partition, group=group, batch=10)
        verdict = await q.ack(got, True, {"group": group})
        left = await pop(q, queue, partition=partition, group=group, batch=10)

        assert data(got) == [{"spaced": 1}, {"spaced": 2}]
        assert {m["partition"] for m in got} == {partition}
        assert verdict["success"] is True, verdict
        assert left == []


async def test_core_a_push_buffered_by_push_maintenance_raises_nothing_and_is_delivered_once_it_ends():
    async with client() as q, httpx.AsyncClient() as http:
        queue = unique("buffered")
        await configure(q, queue)
        switch = await http.post(f"{URL}/api/v1/system/maintenance", json={"push": True})
        assert switch.status_code == 200 and switch.json()["push"] is True, switch.text
        try:
            answers = await q.queue(queue).push([{"data": {"n": i}} for i in range(3)])
            during = await pop(q, queue, batch=10)
        finally:
            switch = await http.post(f"{URL}/api/v1/system/maintenance", json={"push": False})
        got = await pop_until(q, queue, 3)

        assert switch.status_code == 200 and switch.json()["push"] is False, switch.text
        assert [a["status"] for a in answers] == ["buffered"] * 3, answers
        assert all(a["transactionId"] and a["messageId"] for a in answers), answers
        assert during == []
        assert data(got) == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert [m["transactionId"] for m in got] == [a["transactionId"] for a in answers]
