#!/usr/bin/python3
"""librdkafka (Debian python3-confluent-kafka) transactions.

Usage: librdkafka_txn_pipeline.py BOOTSTRAP INPUT OUTPUT GROUP TXNID COUNT

INPUT holds COUNT records. A consumer of GROUP (read_committed) reads them
in chunks; each chunk is copied to OUTPUT inside a transaction
(init_transactions, begin_transaction, produce,
send_offsets_to_transaction, commit_transaction); every third transaction
is aborted instead (abort_transaction) and its chunk read again from the
group's committed offsets. Then OUTPUT is read back with
isolation.level=read_committed and read_uncommitted.

Prints {"committed": [values], "uncommitted": [values], "aborted": N,
"offsets": {partition: committed offset of GROUP on INPUT}}.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def read_all(bootstrap, topic, isolation, want, timeout=30):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "reader-" + isolation + "-" + topic,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": isolation,
        "enable.partition.eof": False,
    })
    c.subscribe([topic])
    out = []
    deadline = time.time() + timeout
    idle_since = None
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            if len(out) >= want:
                if idle_since is None:
                    idle_since = time.time()
                elif time.time() - idle_since > 2:
                    break
            continue
        idle_since = None
        if m.error():
            raise RuntimeError(str(m.error()))
        out.append(m.value().decode())
    c.close()
    return out


def main():
    bootstrap, src, dst, group, txnid, count = sys.argv[1:7]
    count = int(count)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "enable.partition.eof": False,
        "session.timeout.ms": 6000,
    })
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": txnid,
        "transaction.timeout.ms": 20000,
    })
    producer.init_transactions(30)
    consumer.subscribe([src])
    done, aborted, rounds = 0, 0, 0
    deadline = time.time() + 90
    while done < count and time.time() < deadline:
        msgs = consumer.consume(num_messages=25, timeout=1.0)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            continue
        rounds += 1
        producer.begin_transaction()
        for m in msgs:
            producer.produce(dst, key=m.key(), value=b"out-" + m.value(), partition=m.partition())
        if rounds % 3 == 2:
            # Written first, so the aborted copies are in the log (an
            # abort purges what librdkafka has not sent yet).
            producer.flush(30)
            producer.abort_transaction(30)
            aborted += len(msgs)
            # Read the chunk again: back to the group's committed offsets.
            committed = consumer.committed(consumer.assignment(), 10)
            for tp in committed:
                if tp.offset < 0:
                    tp.offset = 0  # OFFSET_BEGINNING for a partition never committed
                consumer.seek(tp)
            continue
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        done += len(msgs)
    offsets = {}
    for tp in consumer.committed([TopicPartition(src, p) for p in range(3)], 10):
        offsets[str(tp.partition)] = tp.offset
    consumer.close()
    committed = read_all(bootstrap, dst, "read_committed", count)
    uncommitted = read_all(bootstrap, dst, "read_uncommitted", count + aborted)
    print(json.dumps({"committed": committed, "uncommitted": uncommitted, "aborted": aborted, "offsets": offsets}))


if __name__ == "__main__":
    main()
