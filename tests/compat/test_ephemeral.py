"""Ephemeral queues through the published client (`client.ephemeral`): configure, push,
pop with groups (fan-out and competing), ack outcomes, a long poll woken by a push, reset,
depth and its one 404, queues, delete, and a full `reject` queue that the client sees as
a 429 it retries.
"""

import asyncio

import pytest

from conftest import client, unique
from queen.errors import EphemeralError, EphemeralQueueNotFoundError


async def test_ephemeral_push_pop_ack_with_groups():
    async with client() as q:
        name = unique("eph")
        declared = await q.ephemeral.configure(name, max_length=100, lease_seconds=30)
        pushed = await q.ephemeral.push(name, [{"n": 1}, {"n": 2}, {"payload": None}])
        tail = await q.ephemeral.pop(name, group="tail", batch=10)
        first = await q.ephemeral.pop(name, group="workers", batch=2)
        second = await q.ephemeral.pop(name, group="workers", batch=2)
        acked = await q.ephemeral.ack(name, first["messages"], group="workers")
        retried = await q.ephemeral.ack(name, second["messages"], group="workers", status="retry")
        again = await q.ephemeral.pop(name, group="workers", batch=10)
        depth = await q.ephemeral.depth(name)

        assert declared["options"]["maxLength"] == 100
        assert pushed["pushed"] == 3
        assert [m["payload"] for m in tail["messages"]] == [{"n": 1}, {"n": 2}, None]
        assert [m["payload"] for m in first["messages"]] == [{"n": 1}, {"n": 2}]
        assert [r["outcome"] for r in acked["results"]] == ["acked", "acked"]
        assert [r["outcome"] for r in retried["results"]] == ["redelivered"]
        assert again["messages"][0]["attempts"] == 2
        assert depth["queue"] == name and depth["pending"] >= 1


async def test_ephemeral_long_poll_is_woken_by_a_push():
    async with client() as q:
        name = unique("eph")
        waiting = asyncio.create_task(q.ephemeral.pop(name, wait=True, timeout=10000))
        await asyncio.sleep(0.3)
        await q.ephemeral.push(name, "hello")
        got = await asyncio.wait_for(waiting, 5)
        assert [m["payload"] for m in got["messages"]] == ["hello"]


async def test_ephemeral_reset_delete_queues_and_the_one_404():
    async with client() as q:
        name = unique("eph")
        await q.ephemeral.configure(name, policy="dropOldest", max_length=2)
        await q.ephemeral.push(name, [1, 2])
        await q.ephemeral.push(name, 3)
        listed = await q.ephemeral.queues()
        reset = await q.ephemeral.reset(name)
        deleted = await q.ephemeral.delete(name)
        with pytest.raises(EphemeralQueueNotFoundError):
            await q.ephemeral.depth(name)

        assert name in [row["queue"] for row in listed["queues"]]
        assert reset["dropped"] == 2
        assert deleted["deleted"] is True


async def test_ephemeral_a_push_too_large_for_the_bounds_is_an_error_not_a_retry():
    async with client() as q:
        name = unique("eph")
        await q.ephemeral.configure(name, max_length=1)
        with pytest.raises(EphemeralError) as refused:
            await q.ephemeral.push(name, [1, 2])
        assert refused.value.status == 413
