"""Binary wire forms of the published client: the "QPB1" push body with per-item
transaction ids (flags 4), the same with client-side framing and zstd (flags 8), and the
framed "QPF1" pop answer. A recording transport proves each form really crossed the wire;
the payloads must come back equal to what was pushed.
"""

import struct
import uuid

import httpx

from conftest import URL, Recorder, client, data, pop, unique

PAYLOADS = [
    {"n": 0, "text": "plain"},
    {"n": 1, "unicode": "zoë ☃ 日本", "list": [1, 2.5, None, True]},
    [1, 2, 3],
    "a string payload",
    {"n": 4, "nested": {"deep": {"deeper": ["x" * 300]}}},
]


def frame_message_ids(body: bytes) -> list:
    """The message ids inside a flag-8 push body: groups of zstd-compressed stored frames."""
    import zstandard

    assert body[:4] == b"QPB1" and body[4] == 8
    at = 5
    (groups,) = struct.unpack_from("<I", body, at)
    at += 4
    ids = []
    for _ in range(groups):
        for _name in range(2):
            (length,) = struct.unpack_from("<H", body, at)
            at += 2 + length
        count, z_len = struct.unpack_from("<II", body, at)
        at += 8
        frames = zstandard.ZstdDecompressor().decompress(body[at:at + z_len])
        at += z_len
        cursor = 0
        for _frame in range(count):
            (body_len,) = struct.unpack_from("<I", frames, cursor)
            ids.append(str(uuid.UUID(bytes=frames[cursor + 5:cursor + 21])))
            cursor += 4 + body_len
    return ids


async def test_binary_push_sends_flags_4_and_the_payloads_pop_back_equal():
    recorder = Recorder()
    async with client(binary_push=True, transport=recorder) as binary, client() as plain:
        queue = unique("bin4")
        txns = [f"bin-{i}" for i in range(len(PAYLOADS))]

        answers = await binary.queue(queue).push(
            [{"data": p, "transactionId": t} for p, t in zip(PAYLOADS, txns)]
        )
        got = await pop(plain, queue, batch=20)

        [sent] = recorder.to("POST", "/api/v1/push")
        assert sent["contentType"] == "application/x-queen-push"
        assert sent["body"][:5] == b"QPB1\x04", sent["body"][:8]
        assert [a["status"] for a in answers] == ["queued"] * len(PAYLOADS), answers
        assert data(got) == PAYLOADS
        assert [m["transactionId"] for m in got] == txns


async def test_binary_push_of_a_known_transaction_id_is_a_duplicate():
    async with client(binary_push=True) as binary, client() as plain:
        queue = unique("bin4dup")

        first = await binary.queue(queue).push([{"data": {"v": 1}, "transactionId": "bin-dup"}])
        again = await binary.queue(queue).push(
            [{"data": {"v": 2}, "transactionId": "bin-dup"}, {"data": {"v": 3}, "transactionId": "bin-new"}]
        )
        got = await pop(plain, queue, batch=20)

        assert [a["status"] for a in first] == ["queued"]
        assert [a["status"] for a in again] == ["duplicate", "queued"]
        assert data(got) == [{"v": 1}, {"v": 3}]


async def test_binary_push_to_several_partitions_keeps_each_partitions_order():
    async with client(binary_push=True) as binary, client() as plain:
        queue = unique("bin4parts")

        await binary.queue(queue).partition("left").push([{"data": {"i": i}} for i in range(3)])
        await binary.queue(queue).partition("right").push([{"data": {"i": i}} for i in range(3)])
        left = await pop(plain, queue, partition="left", batch=10)
        right = await pop(plain, queue, partition="right", batch=10)

        assert data(left) == [{"i": i} for i in range(3)]
        assert data(right) == [{"i": i} for i in range(3)]


async def test_compressed_binary_push_sends_flags_8_and_keeps_the_client_minted_ids():
    recorder = Recorder()
    async with client(binary_push=True, push_compression=True, transport=recorder) as binary, client() as plain:
        queue = unique("bin8")
        txns = [f"z-{i}" for i in range(len(PAYLOADS))]

        answers = await binary.queue(queue).push(
            [{"data": p, "transactionId": t} for p, t in zip(PAYLOADS, txns)]
        )
        got = await pop(plain, queue, batch=20)

        [sent] = recorder.to("POST", "/api/v1/push")
        assert sent["contentType"] == "application/x-queen-push"
        assert sent["body"][:5] == b"QPB1\x08", sent["body"][:8]
        assert [a["status"] for a in answers] == ["queued"] * len(PAYLOADS), answers
        assert data(got) == PAYLOADS
        assert [m["transactionId"] for m in got] == txns
        assert [m["id"] for m in got] == frame_message_ids(sent["body"])


async def test_compressed_binary_push_retried_with_the_same_bytes_is_a_duplicate():
    recorder = Recorder()
    async with client(binary_push=True, push_compression=True, transport=recorder) as binary, client() as plain:
        queue = unique("bin8dup")
        await binary.queue(queue).push([{"data": {"once": True}, "transactionId": "z-once"}])
        [sent] = recorder.to("POST", "/api/v1/push")

        # What the SDK does after a lost answer: the very same bytes again.
        async with httpx.AsyncClient() as raw:
            retry = await raw.post(
                f"{URL}/api/v1/push", content=sent["body"], headers={"content-type": sent["contentType"]}
            )
        got = await pop(plain, queue, batch=20)

        assert retry.status_code < 300, retry.text
        assert [a["status"] for a in retry.json()] == ["duplicate"], retry.text
        assert data(got) == [{"once": True}]


async def test_framed_pop_answers_qpf1_and_the_messages_equal_the_pushed_ones():
    recorder = Recorder()
    async with client() as plain, client(framed_pop=True, transport=recorder) as framed:
        queue = unique("framed")
        txns = [f"f-{i}" for i in range(len(PAYLOADS))]
        await plain.queue(queue).push([{"data": p, "transactionId": t} for p, t in zip(PAYLOADS, txns)])

        got = await pop(framed, queue, batch=20)
        verdict = await framed.ack(got, True)
        left = await pop(plain, queue, batch=20)

        [asked] = [e for e in recorder.exchanges if e["path"].startswith("/api/v1/pop/")]
        assert asked["query"].get("frames") == "true"
        assert asked["answer"][:4] == b"QPF1", asked["answer"][:40]
        assert data(got) == PAYLOADS
        assert [m["transactionId"] for m in got] == txns
        assert all(isinstance(m["partitionId"], str) and m["partitionId"] != "0" for m in got)
        assert all(m["leaseId"] for m in got)
        assert verdict["success"] is True, verdict
        assert left == []


async def test_framed_pop_after_a_compressed_binary_push_round_trips_the_payloads():
    async with client(binary_push=True, push_compression=True, framed_pop=True) as both:
        queue = unique("framed8")
        await both.queue(queue).push([{"data": p} for p in PAYLOADS])

        got = await pop(both, queue, batch=20)

        assert data(got) == PAYLOADS


async def test_framed_consume_processes_every_message_once():
    recorder = Recorder()
    async with client() as plain, client(framed_pop=True, transport=recorder) as framed:
        queue = unique("framedconsume")
        payloads = [{"n": i} for i in range(12)]
        await plain.queue(queue).push([{"data": p} for p in payloads])
        handled = []

        async def handler(messages):
            handled.extend(messages if isinstance(messages, list) else [messages])

        await framed.queue(queue).batch(4).limit(12).idle_millis(5000).timeout_millis(1000).consume(handler)
        left = await pop(plain, queue, batch=20)

        pops = [e for e in recorder.exchanges if e["path"].startswith("/api/v1/pop/") and e["status"] == 200]
        assert pops and all(e["answer"][:4] == b"QPF1" for e in pops), [e["answer"][:40] for e in pops]
        assert data(handled) == payloads
        assert left == []
