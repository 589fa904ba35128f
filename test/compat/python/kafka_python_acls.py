#!/usr/bin/python3
"""kafka-python (Debian python3-kafka) against a broker with ACLs.

Usage: kafka_python_acls.py BOOTSTRAP OPEN_TOPIC SECRET_TOPIC

As User:ANONYMOUS (PLAINTEXT) on a broker with allow.everyone.if.no.acl.found:
creates a DENY of every operation on SECRET_TOPIC with KafkaAdminClient
(CreateAcls at kafka-python's versions), lists it back (DescribeAcls),
produces to both topics and reports what each send raised, then deletes the
binding (DeleteAcls) and produces to SECRET_TOPIC again. Prints one JSON
object for the Go test.
"""
import json
import sys

from kafka import KafkaProducer
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType,
                         ACLResourcePatternType, KafkaAdminClient,
                         ResourcePattern, ResourcePatternFilter, ResourceType)


def send(producer, topic):
    try:
        producer.send(topic, b"v").get(timeout=20)
        return "ok"
    except Exception as e:  # the exception's class names Kafka's error
        return type(e).__name__


def main():
    bootstrap, open_topic, secret = sys.argv[1], sys.argv[2], sys.argv[3]
    result = {}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    deny = ACL(principal="User:ANONYMOUS", host="*", operation=ACLOperation.ALL,
               permission_type=ACLPermissionType.DENY,
               resource_pattern=ResourcePattern(ResourceType.TOPIC, secret, ACLResourcePatternType.LITERAL))
    created = admin.create_acls([deny])
    result["create_failed"] = [str(err) for _, err in created["failed"]]
    acls, err = admin.describe_acls(ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                                              permission_type=ACLPermissionType.ANY,
                                              resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, secret, ACLResourcePatternType.ANY)))
    result["described"] = [[a.principal, a.host, a.operation.name, a.permission_type.name] for a in acls]

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_block_ms=10000, retries=0)
    result["open"] = send(producer, open_topic)
    result["secret"] = send(producer, secret)
    producer.close()

    deleted = admin.delete_acls([ACLFilter(principal="User:ANONYMOUS", host="*", operation=ACLOperation.ANY,
                                           permission_type=ACLPermissionType.ANY,
                                           resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, secret, ACLResourcePatternType.LITERAL))])
    result["deleted"] = sum(len(matches) for _, matches, _ in deleted)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_block_ms=10000)
    result["secret_after_delete"] = send(producer, secret)
    producer.close()
    admin.close()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
