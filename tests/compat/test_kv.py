"""Tier 3 key/value through the published client (`client.kv`): get, put with compare-and-
set, put_if_absent, delete, incr with its bounds, check, get_prefix pages and list_all,
and `once`. Verdicts are 200 fields the client turns into the truth of a `KvResult`.
"""

import asyncio

import pytest

from conftest import client, unique
from queen.errors import KvError


def ns() -> str:
    """A namespace no other test uses (namespaces are lower case)."""
    return unique("kv").lower()


async def test_kv_get_put_compare_and_set_and_delete():
    async with client() as q:
        space = ns()
        missing = await q.kv.get(space, "k")
        first = await q.kv.put(space, "k", {"a": 1}, forever=True)
        hit = await q.kv.get(space, "k")
        lost = await q.kv.put(space, "k", 2, ttl_seconds=60, expect=first["version"] + 1000)
        won = await q.kv.put(space, "k", 3, ttl_seconds=60, expect=first["version"])
        many = await q.kv.get_many(space, ["k", "nope"])
        deleted = await q.kv.delete(space, "k")
        again = await q.kv.delete(space, "k")

        assert not missing and missing["found"] is False
        assert first and hit and hit["value"] == {"a": 1} and hit["expiresAt"] is None
        assert not lost and lost["reason"] == "version" and lost["value"] == {"a": 1}
        assert won and won["version"] > first["version"]
        assert [r["key"] for r in many["rows"]] == ["k"] and many["missing"] == ["nope"]
        assert deleted and not again and again["reason"] == "absent"


async def test_kv_put_if_absent_once_and_check():
    async with client() as q:
        space = ns()
        claimed = await q.kv.put_if_absent(space, "job", "me", ttl_seconds=60)
        taken = await q.kv.put_if_absent(space, "job", "you", ttl_seconds=60)
        held = await q.kv.check(space, "job", expect=claimed["version"])
        free = await q.kv.check(space, "other", expect=0)
        firsts = await asyncio.gather(*(q.kv.once(space, "gate", forever=True) for _ in range(10)))

        assert claimed and not taken and taken["reason"] == "exists" and taken["value"] == "me"
        assert held and free
        assert firsts.count(True) == 1, firsts


async def test_kv_incr_counts_and_refuses_past_its_bounds():
    async with client() as q:
        space = ns()
        one = await q.kv.incr(space, "n", forever=True)
        five = await q.kv.incr(space, "n", delta=4, forever=True)
        refused = await q.kv.incr(space, "n", delta=10, max=9, forever=True)
        now = await q.kv.get(space, "n")

        assert one["value"] == 1 and five["value"] == 5 and isinstance(five["value"], int)
        assert not refused and refused["reason"] == "limit" and refused["value"] == 5
        assert now["value"] == 5


async def test_kv_get_prefix_pages_and_list_all_walks_them():
    async with client() as q:
        space = ns()
        await q.kv.batch([q.kv.op.put(space, f"p/{i:02}", i, forever=True) for i in range(25)])
        await q.kv.put(space, "q/else", 0, forever=True)

        page = await q.kv.get_prefix(space, "p/", limit=10)
        rest = await q.kv.get_prefix(space, "p/", after=page["nextAfter"], limit=100, keys_only=True)
        everything = await q.kv.list_all(space, "p/", limit=7)

        assert [r["key"] for r in page["rows"]] == [f"p/{i:02}" for i in range(10)]
        assert page["truncated"] is True and page["nextAfter"] == "p/09"
        assert [r["key"] for r in rest["rows"]] == [f"p/{i:02}" for i in range(10, 25)]
        assert "value" not in rest["rows"][0] and rest["truncated"] is False
        assert [r["value"] for r in everything] == list(range(25))


async def test_kv_refusals_raise_kv_error_with_the_envelope():
    async with client() as q:
        with pytest.raises(KvError) as refused:
            await q.kv.get("Not A Namespace", "k")

        assert refused.value.status == 400
        assert refused.value.code == "bad_request"
        assert refused.value.reason == "namespace"
