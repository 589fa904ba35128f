#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) over SASL/GSSAPI, for the compat suite.

Usage: sasl_kafka_python.py BOOTSTRAP TOPIC COUNT SERVICE_NAME

Authenticates with the Kerberos ticket in KRB5CCNAME (python3-gssapi),
produces COUNT values "v<i>" to partition 0 waiting on each, then reads
partition 0 from the beginning. Prints {"consumed": [values...]}.
"""
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def main():
    bootstrap, topic, count, service = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    security = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI",
                    sasl_kerberos_service_name=service)
    producer = KafkaProducer(bootstrap_servers=bootstrap, **security)
    for i in range(count):
        producer.send(topic, value=("v%d" % i).encode(), partition=0).get(timeout=30)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **security)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    consumed = []
    deadline = time.monotonic() + 60
    while len(consumed) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            consumed.extend(r.value.decode() for r in records)
    consumer.close()
    json.dump({"consumed": consumed}, sys.stdout)


if __name__ == "__main__":
    main()
