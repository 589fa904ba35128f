#!/usr/bin/python3
"""librdkafka (Debian python3-confluent-kafka) over SASL, for the compat suite.

Usage: sasl_confluent.py BOOTSTRAP TOPIC COUNT CONFIG_JSON

CONFIG_JSON holds the librdkafka security properties (security.protocol,
sasl.mechanisms, sasl.oauthbearer.*, sasl.kerberos.*), given unchanged to
both the producer and the consumer (sasl.oauthbearer.method=oidc through
sasl_oidc.with_oidc, for librdkafka builds without it). Produces COUNT messages "v<i>" to
partition 0, then reads partition 0 from the beginning. Prints one JSON
object on stdout: {"consumed": [values...]}.
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from sasl_oidc import with_oidc


def main():
    bootstrap, topic, count, security = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
    errors = []

    def on_error(err):
        errors.append(str(err))

    security, token_source = with_oidc(security)
    conf = dict(security, **{"bootstrap.servers": bootstrap, "error_cb": on_error})
    producer = Producer(dict(conf, **{"message.timeout.ms": 30000}))
    failed = []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(str(err))

    for i in range(count):
        producer.produce(topic, value="v%d" % i, partition=0, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining or failed:
        raise SystemExit("produce failed: %d undelivered, %s; client errors %s" % (remaining, failed[:3], errors[:3]))

    consumer = Consumer(dict(conf, **{"group.id": "compat-" + topic, "enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    consumed = []
    deadline = time.monotonic() + 60
    while len(consumed) < count and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=1000, timeout=0.5):
            if m.error():
                raise KafkaException(m.error())
            consumed.append(m.value().decode())
    consumer.close()
    json.dump({"consumed": consumed, "errors": errors, "token_source": token_source}, sys.stdout)


if __name__ == "__main__":
    main()
