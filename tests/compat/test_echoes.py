"""Pop echoes through the published client: conflation (last value per partition, the
group's stored policy) and autopilot (the broker sizes pops the caller left unsized).

The client raises ConflationUnsupportedError when a conflation pop comes back without the
echo, so a passing conflation test also proves the echo is there.
"""

from conftest import client, data, push, unique


async def test_echoes_a_conflating_group_gets_only_the_newest_message_of_each_partition():
    async with client() as q:
        queue = unique("latest")
        for i in range(5):
            await push(q, queue, [{"key": "a", "v": i}], partition="a")
        await push(q, queue, [{"key": "b", "v": 0}, {"key": "b", "v": 1}], partition="b")

        got = await (
            q.queue(queue).group("ticker").conflation().batch(10).partitions(2).pop()
        )
        await q.ack(got, True, {"group": "ticker"})
        again = await (
            q.queue(queue).group("ticker").conflation().batch(10).partitions(2).wait(False).pop()
        )

        assert sorted(data(got), key=lambda d: d["key"]) == [{"key": "a", "v": 4}, {"key": "b", "v": 1}]
        assert again == []


async def test_echoes_an_unsized_pop_is_sized_by_the_broker_autopilot():
    async with client() as q:
        queue = unique("sized")
        await push(q, queue, [{"n": i} for i in range(150)])

        first = await q.queue(queue).pop()
        await q.ack(first, True)
        second = await q.queue(queue).batch(1000).pop()

        assert len(first) == 100, len(first)
        assert data(first) == [{"n": i} for i in range(100)]
        assert data(second) == [{"n": i} for i in range(100, 150)]
