#!/usr/bin/env bash
# Installs the real Kafka clients that test/compat drives, from Debian:
#   python3-kafka            kafka-python, for /usr/bin/python3
#   python3-confluent-kafka  librdkafka's Python binding, for /usr/bin/python3
#   kcat                     librdkafka's command-line client
#   iproute2                 `ip netns`, for test/cluster's network-partition test
#   openssl                  test certificates and keystores (PKCS12)
#   krb5-kdc, krb5-admin-server, krb5-user
#                            an MIT Kerberos KDC the GSSAPI tests start on loopback
#   libsasl2-modules-gssapi-mit, python3-gssapi
#                            GSSAPI for librdkafka and kafka-python
#   prometheus               a real Prometheus server scraping /metrics in tests
#   postgresql, mariadb-server
#                            real databases the JDBC connector tests start on
#                            loopback (test/connect, internal/testing/sqlserver)
#   python3-requests, python3-jsonschema
#                            confluent-kafka's SchemaRegistryClient and JSON
#                            Schema serializers, against the schema registry
#   chromium                 headless Chromium, driven by test/console (chromedp)
#                            to check the web console's pages in a browser
#   staticcheck              the lint step (Go module proxy)
#   versitygw                an S3-compatible server the tiered-storage tests
#                            start on loopback (Go module proxy, pinned)
# Idempotent: installs only what is missing, and runs `apt-get update` only
# when something is missing. Prints the versions in use. Needs root (or sudo).
set -euo pipefail

packages=(python3 python3-kafka python3-confluent-kafka kcat iproute2 openssl
	krb5-kdc krb5-admin-server krb5-user libsasl2-modules-gssapi-mit python3-gssapi
	prometheus postgresql mariadb-server
	python3-requests python3-jsonschema chromium)

missing=()
for pkg in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$pkg")
	fi
done

if ((${#missing[@]} > 0)); then
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		sudo=(sudo)
	fi
	echo "installing: ${missing[*]}"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Go tools the lint step runs, from the Go module proxy (pinned).
staticcheck_version=0.8.2
gobin="$(go env GOPATH)/bin"
if ! "$gobin/staticcheck" -version 2>/dev/null | grep -q "($staticcheck_version)"; then
	echo "installing: staticcheck $staticcheck_version"
	go install "honnef.co/go/tools/cmd/staticcheck@v$staticcheck_version"
fi

# The S3-compatible server of the tiered-storage tests (posix backend).
versitygw_version=1.8.0
if ! [ -x "$gobin/versitygw" ]; then
	echo "installing: versitygw $versitygw_version"
	go install "github.com/versity/versitygw/cmd/versitygw@v$versitygw_version"
fi

echo "versions:"
dpkg-query -W -f='  ${Package} ${Version}\n' "${packages[@]}"
# The tests run /usr/bin/python3 explicitly: a pyenv or venv python3 earlier
# in PATH does not see Debian's python3-* packages.
/usr/bin/python3 - <<'PY'
import kafka, confluent_kafka
print("  kafka-python", kafka.__version__)
print("  confluent-kafka", confluent_kafka.version()[0], "librdkafka", confluent_kafka.libversion()[0])
PY
kcat -V 2>&1 | sed -n 's/^Version /  kcat /p'
echo "  $(chromium --version 2>/dev/null)"
echo "  $("$gobin/staticcheck" -version)"
