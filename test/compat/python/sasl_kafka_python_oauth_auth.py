#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) SASL/OAUTHBEARER authentication only.

Usage: sasl_kafka_python_oauth_auth.py BOOTSTRAP PRINCIPAL

Authenticates with an unsecured JWT ("alg":"none") for PRINCIPAL from a
token provider, as kafka-python's sasl_oauth_token_provider, and lists
topics, which needs an authenticated connection. Prints {"topics": [...]}.
"""
import base64
import json
import sys
import time

from kafka import KafkaConsumer
from kafka.oauth.abstract import AbstractTokenProvider


def b64(obj):
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


class UnsecuredToken(AbstractTokenProvider):
    def __init__(self, principal):
        super().__init__()
        self.principal = principal

    def token(self):
        now = int(time.time())
        return b64({"alg": "none"}) + "." + b64({"sub": self.principal, "iat": now, "exp": now + 3600}) + "."


def main():
    bootstrap, principal = sys.argv[1], sys.argv[2]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=UnsecuredToken(principal),
                             api_version=(2, 0, 0), request_timeout_ms=20000)
    topics = sorted(consumer.topics())
    consumer.close()
    json.dump({"topics": topics}, sys.stdout)


if __name__ == "__main__":
    main()
