"""Tier 3 locks through the published client (`client.lock`, `client.semaphore`,
`client.locks`): acquire and release, a second holder refused, `get`, a renew that changes
the token, a semaphore's distinct slots, `async with`, and the `LockError` envelope.
Verdicts are 200 fields the client turns into the truth of a `LockResult`.

`client.transaction().guard(lock)`: a guarded step commits while the permit is the
handle's, and commits nothing (answered, not raised) once another holder has it.
"""

import pytest

from conftest import client, data, pop, unique
from queen.errors import LockError, LockNotHeldError


def name() -> str:
    return unique("lock")


async def test_lock_acquire_refuses_a_second_handle_and_releases():
    async with client() as q:
        lock_name = name()
        first = q.lock(lock_name, ttl_seconds=30)
        second = q.lock(lock_name, ttl_seconds=30)

        assert await first.acquire()
        assert first.held and first.slot == 0 and first.token > 0
        guard = first.guard()
        assert guard == {"op": "check", "ns": "queen-locks", "key": f"{lock_name}#0",
                         "expect": first.token, "required": True}
        assert not await second.acquire()
        assert not second.held and second.token is None
        seen = await q.locks.get(lock_name)
        assert seen and [h["owner"] for h in seen["holders"]] == [first.owner]
        assert seen["holders"][0]["token"] == first.token

        token = first.token
        assert await first.release()
        assert not first.held
        assert not await q.locks.get(lock_name)
        assert await second.acquire()
        assert second.token > token
        assert await second.release()


async def test_lock_renew_changes_the_token_and_the_old_one_is_lost():
    async with client() as q:
        lock_name = name()
        lock = q.lock(lock_name, ttl_seconds=30, auto_renew=False)
        assert await lock.acquire()
        old = lock.token
        assert await lock.renew()
        assert lock.token > old and lock.guard()["expect"] == lock.token

        stale = await q.locks.renew(lock_name, token=old, ttl_seconds=30)
        gone = await q.locks.release(lock_name, token=old)
        assert not stale and stale["reason"] == "lost"
        assert [h["owner"] for h in stale["holders"]] == [lock.owner]
        assert not gone and gone["reason"] == "lost"
        assert (await q.locks.get(lock_name))["holders"][0]["token"] == lock.token
        assert await lock.release()


async def test_locks_api_is_owner_idempotent():
    async with client() as q:
        lock_name = name()
        first = await q.locks.acquire(lock_name, ttl_seconds=30, owner="me")
        again = await q.locks.acquire(lock_name, ttl_seconds=30, owner="me")
        other = await q.locks.acquire(lock_name, ttl_seconds=30, owner="you")

        assert first and again and again["already"] is True
        assert again["token"] == first["token"] and again["slot"] == first["slot"] == 0
        assert not other and other["reason"] == "held"
        assert other["holders"] == [{"slot": 0, "owner": "me"}]
        assert await q.locks.release(lock_name, token=first["token"])


async def test_semaphore_grants_distinct_slots_up_to_its_limit():
    async with client() as q:
        sem_name = name()
        handles = [q.semaphore(sem_name, 3, ttl_seconds=30) for _ in range(5)]
        granted = [await h.acquire() for h in handles]

        assert granted == [True, True, True, False, False]
        assert sorted(h.slot for h in handles[:3]) == [0, 1, 2]
        held = await q.locks.get(sem_name)
        assert [h["slot"] for h in held["holders"]] == [0, 1, 2]
        assert await handles[1].release()
        assert await handles[3].acquire() and handles[3].slot == 1
        for h in handles:
            await h.release()
        assert not await q.locks.get(sem_name)


async def test_async_with_holds_the_lock_for_the_block_and_refuses_when_held():
    async with client() as q:
        lock_name = name()
        async with q.lock(lock_name, ttl_seconds=30) as held:
            assert held.held
            inside = await q.locks.get(lock_name)
            assert inside["holders"][0]["owner"] == held.owner
            with pytest.raises(LockNotHeldError):
                async with q.lock(lock_name, ttl_seconds=30):
                    pass
        assert not await q.locks.get(lock_name)


async def test_a_malformed_call_raises_lock_error_with_the_envelope():
    async with client() as q:
        with pytest.raises(LockError) as refused:
            await q.locks.batch([{"op": "get", "name": "a"}, {"op": "get", "name": "a"}])
        assert refused.value.status == 400
        assert refused.value.code == "bad_request"
        assert refused.value.reason == "locks_duplicate_in_call"


async def test_a_guarded_transaction_commits_only_while_the_lock_is_held():
    async with client() as q:
        lock_name, sink = name(), unique("guarded")
        a = q.lock(lock_name, ttl_seconds=30, auto_renew=False)
        b = q.lock(lock_name, ttl_seconds=30, auto_renew=False)
        assert await a.acquire()

        held = await q.transaction().guard(a).queue(sink).push([{"data": {"step": 1}}]).commit()
        # Behind a's back: its permit is released and b takes the lock.
        assert await q.locks.release(lock_name, token=a.token)
        assert await b.acquire()
        late = await q.transaction().guard(a).queue(sink).push([{"data": {"step": 2}}]).commit()

        assert held["success"] is True, held
        assert late["success"] is False and late["reason"] == "kv_precondition", late
        assert late["failedIndex"] == 1 and late["kvReason"] == "version", late
        assert late["value"]["owner"] == b.owner
        assert a.lost.is_set() and not a.held, "a lost guard marks the lock lost"
        with pytest.raises(LockNotHeldError):
            await q.transaction().guard(a).queue(sink).push([{"data": {"step": 3}}]).commit()
        assert data(await pop(q, sink, batch=10)) == [{"step": 1}]
        await b.release()
