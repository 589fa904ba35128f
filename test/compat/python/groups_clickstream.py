#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) consumer-group case: clickstream.

Usage: groups_clickstream.py BOOTSTRAP TOPIC GROUP produce FIRST COUNT
       groups_clickstream.py BOOTSTRAP TOPIC GROUP consume

produce: a KafkaProducer with a JSON value_serializer sends click events
FIRST..FIRST+COUNT-1 to TOPIC and prints {"sent": [ids]}.
consume: a KafkaConsumer in GROUP (auto_offset_reset=earliest,
enable_auto_commit=True) reads until nothing new arrives for a while, closes
(committing its position) and prints {"received": [[partition, offset, id]]}.
"""
import json
import sys

from kafka import KafkaConsumer, KafkaProducer


def produce(bootstrap, topic, first, count):
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        value_serializer=lambda v: json.dumps(v).encode("utf-8"),
    )
    sent = []
    for i in range(first, first + count):
        event = {"event_id": i, "user": "user-%d" % (i % 7), "page": "/page/%d" % (i % 5), "action": "click"}
        producer.send(topic, value=event).get(timeout=30)
        sent.append(i)
    producer.flush()
    producer.close()
    print(json.dumps({"sent": sent}))


def consume(bootstrap, topic, group):
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        auto_commit_interval_ms=500,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        consumer_timeout_ms=6000,
        value_deserializer=lambda b: json.loads(b.decode("utf-8")),
    )
    received = []
    for msg in consumer:
        received.append([msg.partition, msg.offset, msg.value["event_id"]])
    consumer.close()  # commits the final position (autocommit)
    print(json.dumps({"received": received}))


def main():
    bootstrap, topic, group, mode = sys.argv[1:5]
    if mode == "produce":
        produce(bootstrap, topic, int(sys.argv[5]), int(sys.argv[6]))
    else:
        consume(bootstrap, topic, group)


if __name__ == "__main__":
    main()
