"""Produce N values to a topic and read them back over a secured listener.

usage: secure_roundtrip.py kafka-python|confluent CONFIG_JSON TOPIC N

CONFIG_JSON holds the client's own settings: kafka-python keyword
arguments, or librdkafka properties for confluent-kafka. Prints
{"received": [values...]} as JSON.
"""
import json
import sys
import time


def kafka_python(cfg, topic, n):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    prod = KafkaProducer(**cfg)
    for i in range(n):
        prod.send(topic, ("secure-%d" % i).encode()).get(timeout=30)
    prod.close()
    cons = KafkaConsumer(consumer_timeout_ms=20000, **cfg)
    tp = TopicPartition(topic, 0)
    cons.assign([tp])
    cons.seek_to_beginning(tp)
    got = []
    for msg in cons:
        got.append(msg.value.decode())
        if len(got) == n:
            break
    cons.close()
    return got


def confluent(cfg, topic, n):
    from confluent_kafka import Consumer, Producer, TopicPartition
    errors = []
    prod = Producer(dict(cfg))
    for i in range(n):
        prod.produce(topic, ("secure-%d" % i).encode(),
                     on_delivery=lambda err, msg: err and errors.append(str(err)))
    prod.flush(30)
    if errors:
        raise SystemExit("delivery failed: %s" % errors)
    ccfg = dict(cfg)
    ccfg.update({"group.id": "secure-roundtrip", "enable.auto.commit": False})
    cons = Consumer(ccfg)
    cons.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 30
    while len(got) < n and time.time() < deadline:
        msg = cons.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            raise SystemExit("consume failed: %s" % msg.error())
        got.append(msg.value().decode())
    cons.close()
    return got


def main():
    lib, cfg, topic, n = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    fn = kafka_python if lib == "kafka-python" else confluent
    print(json.dumps({"received": fn(cfg, topic, n)}))


if __name__ == "__main__":
    main()
