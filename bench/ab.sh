#!/usr/bin/env bash
# Side by side of two Vltava builds: each run starts one broker binary on a
# fresh data dir, produces 1,000,000 records of 1 KiB with one franz-go
# producer (acks=1) and consumes them back, and prints records/s and the
# broker's CPU per record (utime+stime from /proc). Runs alternate A, B, A, B.
#
#   bench/ab.sh OLD_BINARY NEW_BINARY [RUNS] [-- extra --override flags for NEW]
#
# VLTAVA_AB_RECORD_SIZE sets the record size (default 1024 bytes).
#
# Build OLD from an earlier commit (git worktree add /tmp/old <commit> &&
# (cd /tmp/old && go build -o /tmp/vltava-old ./cmd/vltava)).
set -euo pipefail
old=$1 new=$2 runs=${3:-3}
size=${VLTAVA_AB_RECORD_SIZE:-1024}
shift $(( $# >= 3 ? 3 : $# ))
[[ ${1:-} == -- ]] && shift
cli=$new

run() { # name binary [extra args]
	local name=$1 bin=$2
	shift 2
	local dir port pid t0 t1 t2 p c
	dir=$(mktemp -d)
	port=$((20000 + RANDOM % 20000))
	"$bin" server --override log.dirs="$dir" --override listeners=PLAINTEXT://127.0.0.1:$port --override admin.listeners= "$@" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do "$cli" topics list --bootstrap-server 127.0.0.1:$port >/dev/null 2>&1 && break; sleep 0.1; done
	"$cli" topics create b --partitions 1 --bootstrap-server 127.0.0.1:$port >/dev/null
	t0=$(awk '{print $14+$15}' /proc/$pid/stat)
	p=$("$cli" perf produce b --num-records 1000000 --record-size "$size" --acks 1 --json --bootstrap-server 127.0.0.1:$port 2>/dev/null)
	t1=$(awk '{print $14+$15}' /proc/$pid/stat)
	c=$("$cli" perf consume b --num-records 1000000 --json --bootstrap-server 127.0.0.1:$port 2>/dev/null)
	t2=$(awk '{print $14+$15}' /proc/$pid/stat)
	kill "$pid"; wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
	# CPU ticks are 1/100 s; per million records, ticks/100 s = µs per record.
	python3 - "$name" "$p" "$c" "$t0" "$t1" "$t2" <<'PY'
import json, sys
n, p, c, t0, t1, t2 = sys.argv[1:]
p, c = json.loads(p), json.loads(c)
print("%-4s produce %10.0f rec/s  cpu %.2f us/rec   consume %10.0f rec/s  cpu %.2f us/rec" % (
    n, p["records_per_sec"], (int(t1) - int(t0)) / 100, c["records_per_sec"], (int(t2) - int(t1)) / 100))
PY
}

for _ in $(seq "$runs"); do
	run old "$old"
	run new "$new" "$@"
done
