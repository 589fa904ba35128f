# A SASL GSSAPI initiator on MIT Kerberos (python3-gssapi), as kafka-python
# and librdkafka (through Cyrus SASL) run it: mutual authentication, then
# the security-layer negotiation of RFC 4752. Tokens travel as hex lines:
# this script writes its tokens to stdout and reads the server's from stdin.
import sys

import gssapi

service = sys.argv[1]  # e.g. kafka@127.0.0.1


def send(tok):
    sys.stdout.write((tok or b"").hex() + "\n")
    sys.stdout.flush()


def recv():
    line = sys.stdin.readline()
    if not line:
        sys.exit("server closed")
    return bytes.fromhex(line.strip())


name = gssapi.Name(service, gssapi.NameType.hostbased_service)
ctx = gssapi.SecurityContext(name=name, usage="initiate",
                             flags=gssapi.RequirementFlag.mutual_authentication |
                             gssapi.RequirementFlag.out_of_sequence_detection)
received = None
while not ctx.complete:
    send(ctx.step(received))
    received = recv()
offer = ctx.unwrap(received).message
if len(offer) != 4 or not offer[0] & 1:
    sys.exit("bad security layer offer %r" % offer)
send(ctx.wrap(bytes([1]) + offer[1:] + b"", False).message)
recv()
sys.stderr.write("initiator done\n")
