"""Idempotent acks=all librdkafka producer for the cluster suite.

Usage: rdkafka_producer.py [--security-protocol=P] [--sasl-mechanism=M]
           [--sasl-username=U] [--sasl-password=S] [--ssl-ca-location=PEM]
           BOOTSTRAP TOPIC PARTITIONS NAME INTERVAL_MS

Writes record seq = 0, 1, 2, ... with key and value "NAME:seq" to partition
seq % PARTITIONS, one every INTERVAL_MS, until its standard input closes; then
flushes and exits. Every delivery report is one JSON line on stdout:
{"seq": n, "partition": p, "offset": o} or {"seq": n, "error": "..."}; the
last line is {"done": true, "fatal": null-or-text, "unflushed": n}.

The options set librdkafka's security.protocol, sasl.mechanism,
sasl.username, sasl.password and ssl.ca.location (a PEM file of the CA that
signed the brokers' certificates); without them the producer connects with
librdkafka's defaults (PLAINTEXT).
"""

import argparse
import json
import sys
import threading
import time

from confluent_kafka import KafkaException, Producer


# Option name -> librdkafka configuration property.
SECURITY_OPTIONS = {
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_username": "sasl.username",
    "sasl_password": "sasl.password",
    "ssl_ca_location": "ssl.ca.location",
}


def parse_args():
    parser = argparse.ArgumentParser(description="idempotent acks=all librdkafka producer")
    for dest, prop in SECURITY_OPTIONS.items():
        parser.add_argument("--" + dest.replace("_", "-"), dest=dest, help=prop)
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("partitions", type=int)
    parser.add_argument("name")
    parser.add_argument("interval_ms", type=int)
    return parser.parse_args()


def main():
    args = parse_args()
    topic, partitions, name = args.topic, args.partitions, args.name
    interval = args.interval_ms / 1000.0
    out_lock = threading.Lock()

    def emit(obj):
        with out_lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    fatal = []

    def on_error(err):
        # Transient errors (a broker down) are logged; a fatal one ends the
        # run, as it would end a real application's producer.
        sys.stderr.write("librdkafka error: %s\n" % err)
        if err.fatal():
            fatal.append(str(err))

    config = {
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        # Long enough to ride out a failover plus a restart.
        "message.timeout.ms": 90000,
        "request.timeout.ms": 10000,
        "topic.metadata.refresh.interval.ms": 1000,
        "retry.backoff.ms": 100,
        "error_cb": on_error,
    }
    for dest, prop in SECURITY_OPTIONS.items():
        value = getattr(args, dest)
        if value is not None:
            config[prop] = value
    producer = Producer(config)

    stop = threading.Event()

    def watch_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    def report(seq):
        def cb(err, msg):
            if err is not None:
                emit({"seq": seq, "error": str(err)})
            else:
                emit({"seq": seq, "partition": msg.partition(), "offset": msg.offset()})
        return cb

    seq = 0
    next_at = time.monotonic()
    while not stop.is_set() and not fatal:
        value = ("%s:%d" % (name, seq)).encode()
        try:
            producer.produce(topic, value=value, key=value, partition=seq % partitions,
                             on_delivery=report(seq))
        except BufferError:
            producer.poll(0.1)
            continue
        except KafkaException as e:
            fatal.append(str(e))
            break
        seq += 1
        producer.poll(0)
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_at = time.monotonic()

    unflushed = producer.flush(120)
    emit({"done": True, "fatal": fatal[0] if fatal else None, "unflushed": unflushed, "produced": seq})


if __name__ == "__main__":
    main()
