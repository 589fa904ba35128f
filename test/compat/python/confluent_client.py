#!/usr/bin/python3
"""librdkafka (Debian python3-confluent-kafka) side of the compat suite.

Usage: confluent_client.py BOOTSTRAP TOPIC COUNT COMPRESSION KEYS

Produces COUNT messages with an idempotent producer (enable.idempotence=true)
and the given compression.type; message j of key k has value "k:j", keys
spread over partitions by librdkafka's default partitioner. Then reads every
partition from the beginning with a manually assigned consumer. Prints one
JSON object on stdout: the delivery reports and the consumed messages, each
as [partition, offset, key, value].
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition


def main():
    bootstrap, topic, count, compression, nkeys = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "compression.type": compression,
        "linger.ms": 10,
        "message.timeout.ms": 60000,
    })
    delivered, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append([msg.partition(), msg.offset(), msg.key().decode(), msg.value().decode()])

    per_key = [0] * nkeys
    for i in range(count):
        k = i % nkeys
        key = "key-%d" % k
        value = "%s:%d" % (key, per_key[k])
        per_key[k] += 1
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining or errors:
        raise SystemExit("produce failed: %d undelivered, errors %s" % (remaining, errors[:5]))

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "compat-" + topic,
        "enable.auto.commit": False,
        "enable.partition.eof": False,
    })
    md = consumer.list_topics(topic, timeout=30)
    partitions = sorted(md.topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    consumed = []
    deadline = time.monotonic() + 90
    while len(consumed) < count and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=1000, timeout=0.5):
            if m.error():
                raise KafkaException(m.error())
            consumed.append([m.partition(), m.offset(), m.key().decode(), m.value().decode()])
    # One more poll: a duplicate or stray message would show up here.
    for m in consumer.consume(num_messages=1000, timeout=1.0):
        if not m.error():
            consumed.append([m.partition(), m.offset(), m.key().decode(), m.value().decode()])
    consumer.close()
    json.dump({"partitions": partitions, "delivered": delivered, "consumed": consumed}, sys.stdout)


if __name__ == "__main__":
    main()
