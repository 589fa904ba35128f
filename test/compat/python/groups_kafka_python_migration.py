#!/usr/bin/python3
"""A kafka-python (Debian python3-kafka) classic consumer (eager range
assignment) in a KIP-848 consumer group.

Usage: groups_kafka_python_migration.py BOOTSTRAP TOPIC GROUP SECONDS

One consumer joins GROUP, which already has consumer-protocol members, and
consumes for SECONDS after it is first assigned partitions: each poll's
records are processed (recorded), then committed synchronously; partitions
being revoked are committed first. It then closes, leaving the group.
Prints {"values": [...], "owned": [partitions it was assigned at some
point]}.
"""
import json
import sys
import time

from kafka import ConsumerRebalanceListener, KafkaConsumer


def main():
    bootstrap, topic, group, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    values, owned = [], set()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            if revoked:
                consumer.commit()

        def on_partitions_assigned(self, assigned):
            owned.update(tp.partition for tp in assigned)

    consumer.subscribe([topic], listener=Listener())
    deadline = time.time() + 60
    stop = None
    while time.time() < deadline and (stop is None or time.time() < stop):
        batch = consumer.poll(timeout_ms=100)
        if stop is None and consumer.assignment():
            stop = time.time() + seconds
        got = False
        for records in batch.values():
            for r in records:
                values.append(r.value.decode())
                got = True
        if got:
            consumer.commit()
    if stop is None:
        raise SystemExit("never assigned partitions")
    consumer.close()
    print(json.dumps({"values": values, "owned": sorted(owned)}))


main()
