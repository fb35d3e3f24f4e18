"""The client's `bearer_token` against a broker with JWT authentication on (run by
tests/broker/compat_python.rs, which signs the tokens and passes them in the environment).

A read-write token moves messages, which come back stamped with its subject; a read-only
token reads but cannot push; no token, or a forged one, is refused with the broker's 401;
the admin surface needs the admin token.
"""

import os

import httpx
import pytest

from conftest import client, configure, data, pop, push, unique

WRITER = os.environ.get("QUEEN_COMPAT_TOKEN_WRITER", "")
READER = os.environ.get("QUEEN_COMPAT_TOKEN_READER", "")
ADMIN = os.environ.get("QUEEN_COMPAT_TOKEN_ADMIN", "")

pytestmark = pytest.mark.skipif(not WRITER, reason="needs the tokens compat_python.rs signs")


async def test_a_read_write_token_pushes_pops_and_acks_stamped_with_its_subject():
    queue = unique("auth-rw")
    async with client(bearer_token=WRITER) as q:
        await configure(q, queue)
        await push(q, queue, [{"n": 1}, {"n": 2}])
        got = await pop(q, queue, batch=10)
        assert data(got) == [{"n": 1}, {"n": 2}]
        assert [m.get("producerSub") for m in got] == ["compat-writer"] * 2, got
        verdict = await q.ack(got, True)
        assert verdict, verdict


async def test_framed_pops_carry_the_stamped_subject_too():
    queue = unique("auth-frames")
    async with client(bearer_token=WRITER, framed_pop=True) as q:
        await push(q, queue, [{"framed": True}])
        got = await pop(q, queue, batch=10)
        assert data(got) == [{"framed": True}]
        assert got[0].get("producerSub") == "compat-writer", got


async def test_a_read_only_token_reads_but_cannot_push():
    queue = unique("auth-ro")
    async with client(bearer_token=WRITER) as q:
        await push(q, queue, [{"n": 1}])
    async with client(bearer_token=READER) as q:
        with pytest.raises(Exception) as refused:
            await q.queue(queue).push([{"data": {"n": 2}}])
        assert "read-write" in str(refused.value), refused.value
        status = await q.admin.get_queue(queue)
        assert status, status


async def test_no_token_or_a_forged_one_is_refused():
    queue = unique("auth-none")
    for token in (None, WRITER[:-4] + "AAAA"):
        async with client(bearer_token=token) as q:
            with pytest.raises(Exception) as refused:
                await q.queue(queue).push([{"data": {"n": 1}}])
            assert "token" in str(refused.value), refused.value


async def test_deleting_a_queue_needs_the_admin_token():
    queue = unique("auth-admin")
    async with client(bearer_token=WRITER) as q:
        await push(q, queue, [{"n": 1}])
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await q.queue(queue).delete()
        assert refused.value.response.status_code == 403
    async with client(bearer_token=ADMIN) as q:
        answer = await q.queue(queue).delete()
        assert answer["deleted"] is True, answer
