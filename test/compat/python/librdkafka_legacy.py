#!/usr/bin/python3
"""librdkafka (Debian python3-confluent-kafka) speaking old protocol versions.

Usage: librdkafka_legacy.py BOOTSTRAP TOPIC COUNT FALLBACK COMPRESSION

With api.version.request=false librdkafka does not ask ApiVersions and
sends the request versions of broker.version.fallback (FALLBACK, e.g.
0.9.0 or 0.10.0: Produce v1/v2 with message formats v0/v1, Fetch v1/v2,
ListOffsets v0, the v0 group APIs). Produces COUNT messages to partition 0,
consumes them in a group from the earliest offset, commits synchronously
and prints one JSON object on stdout.

Each value is padded so that it compresses well: librdkafka sends a message
set uncompressed when compressing would not make it smaller, and the test
checks the stored codec. The padding is stripped from what it reports.
"""
import json
import sys
import time

PAD = b"." * 256

from confluent_kafka import Consumer, Producer, TopicPartition


def main():
    bootstrap, topic, count, fallback, compression = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    legacy = {"api.version.request": False, "broker.version.fallback": fallback}

    producer = Producer(dict(legacy, **{
        "bootstrap.servers": bootstrap,
        "compression.type": compression,
        "linger.ms": 10,
        "message.timeout.ms": 60000,
    }))
    delivered, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append(msg.offset())

    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i + PAD, partition=0, on_delivery=on_delivery)
    producer.flush(60)
    if errors:
        raise SystemExit("delivery failed: %s" % errors[:3])

    consumer = Consumer(dict(legacy, **{
        "bootstrap.servers": bootstrap,
        "group.id": "legacy-" + topic,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10000,
    }))
    consumer.subscribe([topic])
    received = []
    deadline = time.monotonic() + 60
    while len(received) < count and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise SystemExit("consume failed: %s" % m.error())
        received.append([m.offset(), m.key().decode(), m.value()[:-len(PAD)].decode()])
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
    consumer.close()
    json.dump({"delivered": sorted(delivered), "received": received, "committed": committed}, sys.stdout)


if __name__ == "__main__":
    main()
