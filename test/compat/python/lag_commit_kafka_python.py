#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) commits a consumer group's offset.

Usage: lag_commit_kafka_python.py BOOTSTRAP TOPIC GROUP OFFSET

Joins GROUP on TOPIC's partition 0, reads until it has seen OFFSET records,
commits OFFSET for partition 0 and leaves the group, so the group is left
without members and its committed offset. Prints {"committed": OFFSET}.
"""
import json
import sys
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata


def main():
    bootstrap, topic, group, offset = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=30000,
    )
    seen = 0
    deadline = time.monotonic() + 60
    while seen < offset and time.monotonic() < deadline:
        for _, msgs in consumer.poll(timeout_ms=500).items():
            seen += len(msgs)
    if seen < offset:
        raise SystemExit("read only %d of %d records" % (seen, offset))
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(offset, None)})
    consumer.close()
    print(json.dumps({"committed": offset}))


if __name__ == "__main__":
    main()
