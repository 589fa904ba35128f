"""OIDC tokens for librdkafka builds without sasl.oauthbearer.method=oidc.

Debian's librdkafka 2.0.2 is built without libcurl, so it refuses
sasl.oauthbearer.method=oidc. with_oidc() then moves the oidc properties
into an oauth_cb that does what librdkafka's oidc method does: a
client-credentials request to the token endpoint (RFC 6749 §4.4), the
client id and secret in HTTP Basic, the scope in the form.
"""
import base64
import json
import time
import urllib.parse
import urllib.request

from confluent_kafka import KafkaException, Producer

OIDC_KEYS = ("sasl.oauthbearer.method", "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret",
             "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.scope")


def oidc_supported():
    try:
        Producer({"sasl.oauthbearer.method": "oidc"})
        return True
    except KafkaException as e:
        if "not supported in this build" in str(e):
            return False
        raise


def with_oidc(conf):
    """Returns (conf, token source): "oidc" (librdkafka's own) or "oauth_cb"."""
    if conf.get("sasl.oauthbearer.method") != "oidc" or oidc_supported():
        return conf, "oidc" if conf.get("sasl.oauthbearer.method") == "oidc" else "config"
    conf = dict(conf)
    url = conf["sasl.oauthbearer.token.endpoint.url"]
    client_id, secret = conf["sasl.oauthbearer.client.id"], conf["sasl.oauthbearer.client.secret"]
    scope = conf.get("sasl.oauthbearer.scope")
    for k in OIDC_KEYS:
        conf.pop(k, None)

    def oauth_cb(_config_str):
        form = {"grant_type": "client_credentials"}
        if scope:
            form["scope"] = scope
        basic = base64.b64encode(("%s:%s" % (urllib.parse.quote(client_id), urllib.parse.quote(secret))).encode()).decode()
        req = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(),
                                     headers={"Authorization": "Basic " + basic,
                                              "Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            tok = json.load(resp)
        return tok["access_token"], time.time() + float(tok["expires_in"])

    conf["oauth_cb"] = oauth_cb
    return conf, "oauth_cb"
