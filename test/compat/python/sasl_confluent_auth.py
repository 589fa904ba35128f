#!/usr/bin/python3
"""librdkafka (Debian python3-confluent-kafka) SASL authentication only.

Usage: sasl_confluent_auth.py BOOTSTRAP CONFIG_JSON

Lists metadata with the librdkafka security properties of CONFIG_JSON
(sasl.oauthbearer.method=oidc through sasl_oidc.with_oidc), which needs an
authenticated connection. Prints {"brokers": n, "token_source": ...}.
"""
import json
import sys

from confluent_kafka import Producer

from sasl_oidc import with_oidc


def main():
    bootstrap, security = sys.argv[1], json.loads(sys.argv[2])
    security, token_source = with_oidc(security)
    p = Producer(dict(security, **{"bootstrap.servers": bootstrap}))
    p.poll(0)  # serves oauth_cb
    md = p.list_topics(timeout=20)
    json.dump({"brokers": len(md.brokers), "token_source": token_source}, sys.stdout)


if __name__ == "__main__":
    main()
