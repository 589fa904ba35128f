#!/usr/bin/env bash
# Times a /metrics scrape of a single broker hosting many partitions: starts
# BINARY on a fresh data dir with its admin listener on a free port, creates
# one topic of PARTITIONS partitions (10,000 by default), then scrapes
# /metrics RUNS times (5) and prints each scrape's wall time, size and the
# bytes the broker allocated for it (go_memstats_alloc_bytes_total before
# and after).
#
#   bench/scrape.sh BINARY [PARTITIONS] [RUNS] [-- extra --override flags]
set -euo pipefail
bin=$1 parts=${2:-10000} runs=${3:-5}
shift $(( $# >= 3 ? 3 : $# ))
[[ ${1:-} == -- ]] && shift
dir=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
admin=$((port + 1))
"$bin" server --override log.dirs="$dir" --override listeners=PLAINTEXT://127.0.0.1:$port \
	--override admin.listeners=http://127.0.0.1:$admin "$@" >"$dir.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir" "$dir.log"' EXIT
for _ in $(seq 100); do "$bin" topics list --bootstrap-server 127.0.0.1:$port >/dev/null 2>&1 && break; sleep 0.1; done
"$bin" topics create many --partitions "$parts" --bootstrap-server 127.0.0.1:$port >/dev/null
alloc() { curl -s http://127.0.0.1:$admin/metrics | awk '/^go_memstats_alloc_bytes_total /{print $2}'; }
curl -s -o /dev/null http://127.0.0.1:$admin/metrics # warm up
for _ in $(seq "$runs"); do
	a0=$(alloc)
	t=$(curl -s -o /tmp/scrape.$$ -w '%{time_total}' http://127.0.0.1:$admin/metrics)
	a1=$(alloc)
	python3 - "$t" "$(stat -c %s /tmp/scrape.$$)" "$a0" "$a1" "$parts" <<'PY'
import sys
t, size, a0, a1, parts = sys.argv[1:]
print("%s partitions: scrape %.1f ms, %.1f MB of text, %.1f MB allocated" % (parts, float(t) * 1000, int(size) / 1e6, (float(a1) - float(a0)) / 1e6))
PY
done
rm -f /tmp/scrape.$$
