#!/usr/bin/python3
"""Confluent's Python serializers (Debian python3-confluent-kafka, with
python3-requests and python3-jsonschema) against the schema registry.

Usage: registry_json.py BOOTSTRAP REGISTRY_URL TOPIC COUNT

A SchemaRegistryClient and a JSONSerializer (auto.register.schemas) produce
COUNT objects to TOPIC through a SerializingProducer; a DeserializingConsumer
with a JSONDeserializer reads them back from the beginning. The client's own
calls are exercised on the way: the registered version by subject and by
id, a lookup, the compatibility level and checks of a compatible and an
incompatible next schema. Prints one JSON object on stdout.
"""
import json
import sys

from confluent_kafka import DeserializingConsumer, SerializingProducer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import StringDeserializer, StringSerializer

SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "city": {"type": "string"},
        "amount": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "city"],
    "additionalProperties": False,
})

# Closed content model: a new optional property is a BACKWARD-compatible
# change, a new required one is not.
COMPATIBLE = json.loads(SCHEMA)
COMPATIBLE["properties"]["note"] = {"type": "string"}
INCOMPATIBLE = json.loads(SCHEMA)
INCOMPATIBLE["properties"]["customer"] = {"type": "string"}
INCOMPATIBLE["required"] = ["id", "city", "customer"]


def main():
    bootstrap, registry_url, topic, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    subject = topic + "-value"
    client = SchemaRegistryClient({"url": registry_url})

    producer = SerializingProducer({
        "bootstrap.servers": bootstrap,
        "key.serializer": StringSerializer("utf_8"),
        "value.serializer": JSONSerializer(SCHEMA, client),
        "linger.ms": 5,
        "message.timeout.ms": 60000,
    })
    sent, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))

    for i in range(count):
        order = {"id": i, "city": ["Praha", "Brno", "Ostrava"][i % 3], "amount": i * 1.5, "tags": ["t%d" % (i % 4)]}
        sent.append(order)
        producer.produce(topic, key="order-%d" % i, value=order, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining or errors:
        raise SystemExit("produce failed: %d undelivered, errors %s" % (remaining, errors[:5]))

    latest = client.get_latest_version(subject)
    by_id = client.get_schema(latest.schema_id)
    looked_up = client.lookup_schema(subject, Schema(SCHEMA, "JSON"))
    level = client.get_compatibility()
    compatible = client.test_compatibility(subject, Schema(json.dumps(COMPATIBLE), "JSON"))
    incompatible = client.test_compatibility(subject, Schema(json.dumps(INCOMPATIBLE), "JSON"))
    refused = None
    try:
        client.register_schema(subject, Schema(json.dumps(INCOMPATIBLE), "JSON"))
    except SchemaRegistryError as e:
        refused = [e.http_status_code, e.error_code]
    second_id = client.register_schema(subject, Schema(json.dumps(COMPATIBLE), "JSON"))

    consumer = DeserializingConsumer({
        "bootstrap.servers": bootstrap,
        "group.id": "compat-" + topic,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "key.deserializer": StringDeserializer("utf_8"),
        "value.deserializer": JSONDeserializer(SCHEMA),
    })
    consumer.subscribe([topic])
    received, keys = [], []
    idle = 0
    while len(received) < count and idle < 60:
        msg = consumer.poll(1.0)
        if msg is None:
            idle += 1
            continue
        if msg.error():
            raise SystemExit("consume: %s" % msg.error())
        received.append(msg.value())
        keys.append(msg.key())
    consumer.close()

    json.dump({
        "sent": sent,
        "received": received,
        "keys": keys,
        "schema_id": latest.schema_id,
        "version": latest.version,
        "subject": latest.subject,
        "schema_type": by_id.schema_type,
        "schema_by_id": by_id.schema_str,
        "lookup_id": looked_up.schema_id,
        "lookup_version": looked_up.version,
        "compatibility": level,
        "compatible": compatible,
        "incompatible": incompatible,
        "refused": refused,
        "second_id": second_id,
        "subjects": client.get_subjects(),
        "versions": client.get_versions(subject),
    }, sys.stdout)


if __name__ == "__main__":
    main()
