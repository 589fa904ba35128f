#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) speaking old protocol versions.

Usage: kafka_python_legacy.py BOOTSTRAP TOPIC COUNT API_VERSION COMPRESSION

API_VERSION is kafka-python's api_version as dotted numbers ("0.9", "0.10",
"0.10.1", "1.0"): with it set, kafka-python skips version probing and sends
the request versions of that Kafka release (Produce v1 and Fetch v1 with
message format v0 for 0.9, Produce v2 and Fetch v2 for 0.10, ListOffsets
v0, JoinGroup v0, ...). COMPRESSION is none or gzip. The script produces
COUNT records, consumes them in a consumer group from the earliest offset,
commits, and prints one JSON object on stdout. Errors go to stderr with a
non-zero exit.
"""
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def main():
    bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    api_version = tuple(int(x) for x in sys.argv[4].split("."))
    compression = None if sys.argv[5] == "none" else sys.argv[5]
    result = {}

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        api_version=api_version,
        acks="all",
        compression_type=compression,
        linger_ms=20,
        request_timeout_ms=30000,
    )
    futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0) for i in range(count)]
    result["sent"] = [f.get(timeout=30).offset for f in futures]
    producer.close(timeout=30)

    group = "legacy-" + topic
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        api_version=api_version,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        request_timeout_ms=40000,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
    )
    received = []
    deadline = time.monotonic() + 60
    while len(received) < count and time.monotonic() < deadline:
        for tp, msgs in consumer.poll(timeout_ms=500).items():
            for m in msgs:
                received.append([m.offset, m.key.decode(), m.value.decode()])
    consumer.commit()
    tp = TopicPartition(topic, 0)
    result["committed"] = consumer.committed(tp)
    result["end"] = consumer.end_offsets([tp])[tp] if api_version >= (0, 10, 1) else None
    consumer.close()
    result["received"] = received
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
