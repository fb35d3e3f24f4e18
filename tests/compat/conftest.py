"""Shared fixtures of the compatibility suite: the published `queen-mq` client run against
a broker that the Rust test harness (tests/broker/compat_python.rs) started in-process.

The broker's URL arrives in QUEEN_COMPAT_URL. Every test makes its own queue names (uuid
suffix), so tests never see each other's messages and the order they run in does not
matter. Test functions may be `async def`: the hook below runs each one in a fresh event
loop under a deadline, so a hung long-poll fails its test instead of the whole run.
"""

import asyncio
import inspect
import os
import time
import uuid

import httpx
import pytest

from queen import Queen

URL = os.environ.get("QUEEN_COMPAT_URL", "http://127.0.0.1:6632")

# Generous against a loaded CI machine, yet well under the Rust side's deadline for a group.
TEST_DEADLINE_SECONDS = 90


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs `async def` tests (no plugin needed) in their own loop, with a deadline."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(asyncio.wait_for(pyfuncitem.obj(**args), TEST_DEADLINE_SECONDS))
    return True


def unique(prefix: str) -> str:
    """A name no other test uses."""
    return f"compat-{prefix}-{uuid.uuid4().hex[:12]}"


def client(**options) -> Queen:
    """A client of the broker under test; use as `async with client() as q:`."""
    options.setdefault("retry_attempts", 1)
    return Queen(url=URL, **options)


async def configure(q: Queen, queue: str, **options) -> dict:
    """Creates a queue through the SDK's create(); the answer must carry no error."""
    answer = await q.queue(queue).config(options).create()
    assert not (isinstance(answer, dict) and answer.get("error")), answer
    return answer


async def push(q: Queen, queue: str, payloads, partition: str = None, txns=None) -> list:
    """Pushes payloads (one batch) and asserts every item was queued; returns the answers."""
    items = []
    for i, payload in enumerate(payloads):
        item = {"data": payload}
        if txns is not None:
            item["transactionId"] = txns[i]
        items.append(item)
    builder = q.queue(queue)
    if partition is not None:
        builder = builder.partition(partition)
    answers = await builder.push(items)
    assert isinstance(answers, list), answers
    assert [a.get("status") for a in answers] == ["queued"] * len(payloads), answers
    return answers


async def pop(q: Queen, queue: str, batch: int = 100, partition: str = None, group: str = None,
              wait: bool = False, timeout_millis: int = 30000, mode: str = None,
              partitions: int = None) -> list:
    """A one-shot pop through the SDK's pop()."""
    builder = q.queue(queue).batch(batch).wait(wait).timeout_millis(timeout_millis)
    if partitions is not None:
        builder = builder.partitions(partitions)
    if partition is not None:
        builder = builder.partition(partition)
    if group is not None:
        builder = builder.group(group)
    if mode is not None:
        builder = builder.subscription_mode(mode)
    return await builder.pop()


async def pop_until(q: Queen, queue: str, count: int, seconds: float = 15, **kwargs) -> list:
    """Pops (acking nothing) until `count` messages arrived or the deadline passed."""
    got = []
    deadline = time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        got.extend(await pop(q, queue, wait=True, timeout_millis=1000, **kwargs))
    return got


def data(messages) -> list:
    """The payloads of popped messages, in delivery order."""
    return [m["data"] for m in messages]


class Recorder(httpx.AsyncBaseTransport):
    """An httpx transport that forwards to the network and keeps what crossed the wire,
    so a test can prove the binary/framed forms were really used (a broker that ignores
    `frames=true` answers JSON, which the client reads just as well)."""

    def __init__(self):
        self._inner = httpx.AsyncHTTPTransport()
        self.exchanges = []

    async def handle_async_request(self, request):
        response = await self._inner.handle_async_request(request)
        await response.aread()
        self.exchanges.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": dict(request.url.params),
                "contentType": request.headers.get("content-type"),
                "body": request.content,
                "status": response.status_code,
                "answer": response.content,
            }
        )
        return response

    async def aclose(self):
        await self._inner.aclose()

    def to(self, method: str, path: str) -> list:
        return [e for e in self.exchanges if e["method"] == method and e["path"] == path]
