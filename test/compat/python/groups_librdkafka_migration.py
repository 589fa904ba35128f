#!/usr/bin/python3
"""A librdkafka (Debian python3-confluent-kafka) classic consumer in a
KIP-848 consumer group.

Usage: groups_librdkafka_migration.py BOOTSTRAP TOPIC GROUP SECONDS

One cooperative-sticky consumer joins GROUP, which already has
consumer-protocol members, and consumes for SECONDS after it is first
assigned partitions: each message is processed (recorded), then committed
synchronously; partitions being revoked are committed first. It then
closes, leaving the group. Prints {"values": [...], "owned": [partitions
it was assigned at some point]}.
"""
import json
import sys
import time

from confluent_kafka import Consumer


def main():
    bootstrap, topic, group, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    values, owned = [], set()

    def on_assign(consumer, partitions):
        owned.update(tp.partition for tp in partitions)

    def on_revoke(consumer, partitions):
        try:
            consumer.commit(asynchronous=False)
        except Exception as e:  # nothing to commit yet
            print("commit on revoke: %s" % e, file=sys.stderr)

    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 300,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
        "enable.partition.eof": False,
    })
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    deadline = time.time() + 60
    stop = None
    while time.time() < deadline and (stop is None or time.time() < stop):
        m = c.poll(0.1)
        if stop is None and c.assignment():
            stop = time.time() + seconds
        if m is None:
            continue
        if m.error():
            raise SystemExit("consume: %s" % m.error())
        values.append(m.value().decode())
        c.commit(message=m, asynchronous=False)
    if stop is None:
        raise SystemExit("never assigned partitions")
    c.close()
    print(json.dumps({"values": values, "owned": sorted(owned)}))


main()
