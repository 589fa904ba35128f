#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) side of the compat suite.

Usage: kafka_python_client.py BOOTSTRAP TOPIC COUNT

Produces COUNT JSON values to TOPIC (record i to partition i % partitions,
waiting on each send with .get()), reads the topic back with a manually
assigned consumer from the beginning, lists topics and partitions, and prints
one JSON object on stdout for the Go test to check. Errors go to stderr with
a non-zero exit.
"""
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def main():
    bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    result = {}

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        value_deserializer=lambda b: json.loads(b.decode("utf-8")),
        request_timeout_ms=30000,
    )
    result["topics"] = sorted(consumer.topics())
    partitions = sorted(consumer.partitions_for_topic(topic) or [])
    result["partitions"] = partitions
    if not partitions:
        raise SystemExit("topic %s has no partitions in metadata" % topic)

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        key_serializer=lambda s: s.encode("utf-8"),
        value_serializer=lambda v: json.dumps(v).encode("utf-8"),
        request_timeout_ms=30000,
    )
    sent = []
    for i in range(count):
        p = partitions[i % len(partitions)]
        value = {"i": i, "text": "kafka-python record %d" % i, "even": i % 2 == 0}
        md = producer.send(topic, key="key-%d" % i, value=value, partition=p).get(timeout=30)
        sent.append({"partition": md.partition, "offset": md.offset, "key": "key-%d" % i, "value": value})
    producer.close(timeout=30)
    result["sent"] = sent

    consumer.assign([TopicPartition(topic, p) for p in partitions])
    consumer.seek_to_beginning()
    received = []
    deadline = time.monotonic() + 60
    while len(received) < count and time.monotonic() < deadline:
        for tp, msgs in consumer.poll(timeout_ms=500).items():
            for m in msgs:
                received.append({
                    "partition": m.partition,
                    "offset": m.offset,
                    "key": m.key.decode("utf-8") if m.key is not None else None,
                    "value": m.value,
                })
    # One more poll: a duplicate or stray record would show up here.
    for tp, msgs in consumer.poll(timeout_ms=1000).items():
        for m in msgs:
            received.append({"partition": m.partition, "offset": m.offset,
                             "key": m.key.decode("utf-8") if m.key is not None else None, "value": m.value})
    consumer.close()
    result["received"] = received
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
