#!/usr/bin/python3
"""librdkafka (Debian python3-confluent-kafka) transactions.

Usage: confluent_txn.py BOOTSTRAP TOPIC GROUP

A transactional producer commits ten records, aborts ten, then commits five
more together with the offset 5 of GROUP on the topic's partition 0
(send_offsets_to_transaction). Then a read_committed and a read_uncommitted
consumer read the partition to its end, and the group's committed offset is
fetched. Prints one JSON object: the values each consumer read, in order,
and the committed offset.
"""
import json
import sys

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition


def read_all(bootstrap, topic, isolation):
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "reader-" + isolation + "-" + topic,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": isolation,
    })
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values = []
    while True:
        msg = consumer.poll(30)
        if msg is None:
            raise SystemExit("%s consumer: no message or end of partition within 30 s" % isolation)
        if msg.error():
            if msg.error().code() == -191:  # _PARTITION_EOF
                break
            raise SystemExit("%s consumer: %s" % (isolation, msg.error()))
        values.append(msg.value().decode())
    consumer.close()
    return values


def main():
    bootstrap, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": "compat-" + topic,
        "message.timeout.ms": 60000,
    })
    producer.init_transactions(60)

    # The group whose offsets ride on the last transaction.
    offsets_consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})

    for name, count, commit in (("c", 10, True), ("a", 10, False), ("d", 5, True)):
        producer.begin_transaction()
        for i in range(count):
            producer.produce(topic, value="%s%d" % (name, i), partition=0)
        if name == "d":
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, 5)],
                                                 offsets_consumer.consumer_group_metadata(), 60)
        # Delivered before the end, so an aborted transaction's records
        # are in the log (abort_transaction purges what is unsent).
        if producer.flush(60):
            raise SystemExit("records of transaction %s not delivered" % name)
        if commit:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)

    committed = offsets_consumer.committed([TopicPartition(topic, 0)], 30)[0].offset
    offsets_consumer.close()
    json.dump({
        "read_committed": read_all(bootstrap, topic, "read_committed"),
        "read_uncommitted": read_all(bootstrap, topic, "read_uncommitted"),
        "committed": committed,
    }, sys.stdout)


if __name__ == "__main__":
    main()
