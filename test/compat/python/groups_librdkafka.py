#!/usr/bin/python3
"""librdkafka (Debian python3-confluent-kafka) consumer-group cases.

Usage: groups_librdkafka.py BOOTSTRAP TOPIC GROUP MODE

MODE members: three consumers (range/roundrobin eager assignment) join
GROUP on TOPIC; once every partition is owned by exactly one member, the
first closes and the other two take over its partitions. Prints
{"before": {member: [partitions]}, "after": {...}}.

MODE cooperative: the same with partition.assignment.strategy
cooperative-sticky; also reports, per remaining member, whether it ever
lost a partition during the incremental rebalance ("revoked").

MODE commit COUNT: one consumer reads COUNT messages from the beginning and
commits them synchronously; prints {"committed": {partition: offset}}.

MODE resume: one consumer joins GROUP (auto.offset.reset=earliest) and
reports the first offset it receives per partition, plus the group's
committed offsets as the broker reports them.
"""
import json
import sys
import time

from confluent_kafka import Consumer, TopicPartition


def conf(bootstrap, group, strategy="range"):
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 300,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": strategy,
        "enable.partition.eof": False,
    }


def settle(consumers, want_members, partitions, deadline_s=40, stable_polls=10):
    """Polls every consumer until their assignments are disjoint, cover all
    partitions, give every member at least one, and have not changed for
    stable_polls rounds (a member that has not joined yet owns nothing, so
    a group still forming is not taken for a settled one)."""
    deadline = time.time() + deadline_s
    last, same = None, 0
    while time.time() < deadline:
        for c in consumers:
            c.poll(0.05)
        cur = {i: sorted(tp.partition for tp in c.assignment()) for i, c in enumerate(consumers)}
        owned = [p for ps in cur.values() for p in ps]
        ok = (sorted(owned) == list(range(partitions)) and len(consumers) == want_members
              and all(cur.values()))
        if ok and cur == last:
            same += 1
            if same >= stable_polls:
                return cur
        else:
            same = 0
        last = cur
    raise SystemExit("assignment did not settle: %s" % last)


def members(bootstrap, topic, group, strategy):
    revoked = {}

    def tracker(i):
        def on_revoke(consumer, parts):
            if parts:
                revoked.setdefault(i, []).extend(tp.partition for tp in parts)

        return on_revoke

    consumers = []
    for i in range(3):
        c = Consumer(conf(bootstrap, group, strategy))
        c.subscribe([topic], on_revoke=tracker(i))
        consumers.append(c)
    partitions = len(consumers[0].list_topics(topic, timeout=10).topics[topic].partitions)
    before = settle(consumers, 3, partitions)
    revoked.clear()
    consumers[0].close()
    rest = consumers[1:]
    after_raw = settle(rest, 2, partitions)
    after = {i + 1: ps for i, ps in after_raw.items()}
    out = {"before": before, "after": after, "revoked": {k: sorted(v) for k, v in revoked.items()}}
    for c in rest:
        c.close()
    print(json.dumps(out))


def commit(bootstrap, topic, group, count):
    c = Consumer(conf(bootstrap, group))
    c.subscribe([topic])
    got = 0
    last = {}
    deadline = time.time() + 40
    while got < count and time.time() < deadline:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        got += 1
        last[m.partition()] = m.offset() + 1
    if got < count:
        raise SystemExit("consumed %d of %d" % (got, count))
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in last.items()], asynchronous=False)
    c.close()
    print(json.dumps({"committed": last}))


def resume(bootstrap, topic, group):
    c = Consumer(conf(bootstrap, group))
    c.subscribe([topic])
    first = {}
    deadline = time.time() + 40
    parts = None
    while time.time() < deadline:
        m = c.poll(0.2)
        if parts is None and c.assignment():
            parts = c.assignment()
        if m is None or m.error():
            if parts and len(first) == len(parts):
                break
            continue
        first.setdefault(m.partition(), m.offset())
        if parts and len(first) == len(parts):
            break
    committed = {tp.partition: tp.offset for tp in c.committed(parts or [], timeout=10)}
    c.close()
    print(json.dumps({"first": first, "committed": committed}))


def main():
    bootstrap, topic, group, mode = sys.argv[1:5]
    if mode == "members":
        members(bootstrap, topic, group, "range,roundrobin")
    elif mode == "cooperative":
        members(bootstrap, topic, group, "cooperative-sticky")
    elif mode == "commit":
        commit(bootstrap, topic, group, int(sys.argv[5]))
    elif mode == "resume":
        resume(bootstrap, topic, group)
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
