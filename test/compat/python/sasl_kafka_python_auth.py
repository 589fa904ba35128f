#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) SASL/GSSAPI authentication only.

Usage: sasl_kafka_python_auth.py BOOTSTRAP SERVICE_NAME

Connects with the Kerberos ticket in KRB5CCNAME and lists topics, which
needs an authenticated connection. Prints {"topics": [...]}.
"""
import json
import sys

from kafka import KafkaConsumer


def main():
    bootstrap, service = sys.argv[1], sys.argv[2]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="GSSAPI", sasl_kerberos_service_name=service,
                             api_version=(2, 0, 0), request_timeout_ms=20000)
    topics = sorted(consumer.topics())
    consumer.close()
    json.dump({"topics": topics}, sys.stdout)


if __name__ == "__main__":
    main()
