#!/usr/bin/env bash
# sessions_load.sh: the session module's load targets, measured in
# one run on loopback. Results and how to read them: BENCHMARKS.md, "Sessions".
#
#   bench/sessions_load.sh            # each phase PHASE_SECONDS (default 5) long
#   SCRIPT_PATH=evalsha bench/sessions_load.sh
#                                     # the sidecar as a Redis user whose ACL
#                                     # refuses FUNCTION and FCALL: EVALSHA
#
# Needs redis-server, redis-benchmark, redis-cli, wrk, curl, go, and Debian's
# python3-redis for /usr/bin/python3 (apt-get install -y redis-server wrk
# python3-redis). It starts one redis-server and one built sidecar on free
# loopback ports, and stops both (and everything else it started) on exit.
#
# Phases, all on the same Redis and the same 2 cores, load generator included:
#   a  redis-benchmark -c 16 RPUSH of one stored entry's JSON (the ceiling)
#   b  wrk -c 16: POST .../entries to the sidecar, unique sessions and qa_ids
#   c  Cognee's append: redis-py RPUSH then EXPIRE from 16 threads
#   d  feedback on a 500-entry session, one client, random targets: Cognee's
#      client path (LRANGE all, json.loads, LSET) vs the sidecar's PUT
#      .../feedback (wrk -c 1, and a Python http.client for reference)
# For each it prints the rate and the CPU time per request of redis-server,
# the sidecar and the load generator (from /proc and bash's `time`).
set -euo pipefail

PHASE_SECONDS=${PHASE_SECONDS:-5}
CONNS=16
ENTRIES=500
PY=/usr/bin/python3 # Debian's, with python3-redis; not a pyenv python first on PATH

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
tmp=$(mktemp -d)
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for bin in redis-server redis-benchmark redis-cli wrk curl go; do
	command -v "$bin" >/dev/null || { echo "sessions_load.sh: $bin not found" >&2; exit 1; }
done
"$PY" -c 'import redis' 2>/dev/null || { echo "sessions_load.sh: $PY lacks redis-py (apt-get install -y python3-redis)" >&2; exit 1; }

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user+sys CPU of a process, in clock ticks
hz=$(getconf CLK_TCK)

# --- Redis and the sidecar -------------------------------------------------
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
	--daemonize no --logfile "$tmp/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
rcli() { redis-cli -h 127.0.0.1 -p "$rport" "$@"; }

redis_url="redis://127.0.0.1:$rport/0"
if [ "${SCRIPT_PATH:-functions}" = evalsha ]; then
	rcli acl setuser evalsha on '>evalsha' '~*' '&*' +@all -function -fcall -fcall_ro >/dev/null
	redis_url="redis://evalsha:evalsha@127.0.0.1:$rport/0"
fi

(cd "$root" && go build -o "$tmp/sidecar" ./cmd/sidecar)
aport=$(free_port)
oport=$(free_port)
# The targets compare the basic append, with its event, to Cognee's path:
# the relevance search index's work is measured on its own
# (BenchmarkAppendSearchIndex). SEARCH_INDEX=true includes it here.
REDIS_URL="$redis_url" LOG_LEVEL=warn SEARCH_INDEX="${SEARCH_INDEX:-false}" \
	SIDECAR_LISTEN_ADDR="127.0.0.1:$aport" SIDECAR_OPS_ADDR="127.0.0.1:$oport" \
	"$tmp/sidecar" 2>"$tmp/sidecar.log" &
sidecar_pid=$!
pids+=("$sidecar_pid")
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$oport/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$oport/readyz" >/dev/null || { echo "sidecar not ready:" >&2; cat "$tmp/sidecar.log" >&2; exit 1; }
api="http://127.0.0.1:$aport"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "redis:   $(redis-server --version | cut -d' ' -f3) on 127.0.0.1:$rport; sidecar on $api (SEARCH_INDEX=${SEARCH_INDEX:-false}, scripts by ${SCRIPT_PATH:-functions}); ${PHASE_SECONDS}s per phase"
echo

# measure NAME REQUESTS_FILE CMD...: runs CMD (stdout to $tmp/NAME.out) and
# records the CPU that redis-server, the sidecar and CMD itself used.
declare -A cpu_r cpu_s cpu_g
measure() {
	local name=$1
	shift
	local r0 s0 r1 s1 t
	r0=$(ticks "$redis_pid")
	s0=$(ticks "$sidecar_pid")
	t=$( { TIMEFORMAT='%U %S'; time "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; } 2>&1 ) ||
		{ echo "phase $name failed:" >&2; cat "$tmp/$name.err" "$tmp/$name.out" >&2; exit 1; }
	r1=$(ticks "$redis_pid")
	s1=$(ticks "$sidecar_pid")
	cpu_r[$name]=$(awk -v a="$r0" -v b="$r1" -v hz="$hz" 'BEGIN{print (b-a)/hz}')
	cpu_s[$name]=$(awk -v a="$s0" -v b="$s1" -v hz="$hz" 'BEGIN{print (b-a)/hz}')
	cpu_g[$name]=$(awk -v t="$t" 'BEGIN{split(t, x, " "); print x[1] + x[2]}')
}

# report NAME RATE SECONDS: prints the rate and CPU microseconds per request,
# and keeps redis's and the sidecar's in us_r[NAME] and us_s[NAME].
declare -A us_r us_s
report() {
	local name=$1 label=$2 rate=$3 secs=$4
	us_r[$name]=$(awk -v rate="$rate" -v s="$secs" -v r="${cpu_r[$name]}" 'BEGIN{n = rate * s; if (n < 1) n = 1; printf "%.1f", r*1e6/n}')
	us_s[$name]=$(awk -v rate="$rate" -v s="$secs" -v r="${cpu_s[$name]}" 'BEGIN{n = rate * s; if (n < 1) n = 1; printf "%.1f", r*1e6/n}')
	awk -v l="$label" -v rate="$rate" -v s="$secs" -v r="${cpu_r[$name]}" -v sc="${cpu_s[$name]}" -v g="${cpu_g[$name]}" 'BEGIN{
		n = rate * s; if (n < 1) n = 1
		printf "  %-50s %9.0f req/s   CPU us/req: redis %5.1f  sidecar %6.1f  generator %6.1f\n", l, rate, r*1e6/n, sc*1e6/n, g*1e6/n }'
}

# redis-benchmark --csv: the test name holds the JSON's own quotes, so count
# fields from the end: rps avg min p50 p95 p99 max.
rb_rate() { awk -F'"' 'NR==2{print $(NF-13)}' "$@"; }
rb_p50() { awk -F'"' 'NR==2{print $(NF-7)}' "$1"; }
rb_p99() { awk -F'"' 'NR==2{print $(NF-3)}' "$1"; }
wrk_rate() { awk '/^Requests\/sec:/{print $2}' "$1"; }
wrk_secs() { awk '/requests in/{v=$4; sub(/,$/, "", v); if (v ~ /ms$/) {sub(/ms$/, "", v); v/=1000} else if (v ~ /m$/) {sub(/m$/, "", v); v*=60} else sub(/s$/, "", v); print v}' "$1"; }
wrk_pct() { awk -v p="$2" '$1 == p {print $2}' "$1"; }
wrk_check() {
	if grep -q 'Non-2xx\|Socket errors' "$1"; then echo "wrk saw errors:" >&2; cat "$1" >&2; exit 1; fi
}

# script_calls WHAT: where Redis spent each script call since the last
# CONFIG RESETSTAT (INFO commandstats counts the commands a script runs as
# well as the FCALL or EVALSHA around them), and every other command.
script_calls() {
	rcli info commandstats | tr -d '\r' | awk -F'[:,=]' -v what="$1" '/^cmdstat_/{
	name = substr($1, 9); calls[name] = $3; usec[name] = $5 }
	END {
		s = "fcall"; if (calls[s] == 0) s = "evalsha"
		n = calls[s]; if (n == 0) exit
		inner = 0; list = ""
		for (c in calls) if (c != s) {
			inner += usec[c]; k += calls[c]
			if (calls[c] >= n / 20) list = list sprintf(" %s %.1fx/%.2fus", c, calls[c]/n, usec[c]/n)
		}
		printf "     Redis per %s: %s %.1f us; its %.1f redis.call()s %.1f us, so Lua and call overhead %.1f us\n", what, toupper(s), usec[s]/n, k/n, inner/n, (usec[s]-inner)/n
		printf "     calls per %s (count/us):%s\n", what, list
	}'
}

entry=$("$PY" "$here/sessions_cognee.py" entry)
echo "entry:   ${#entry} bytes of JSON, as Cognee stores it"
echo

# --- target 1: appends -------------------------------------------------------
echo "Appends, $CONNS connections:"
# a. redis-benchmark has no duration: size -n from a short calibration run.
rate0=$(redis-benchmark -h 127.0.0.1 -p "$rport" -c "$CONNS" -n 20000 --csv RPUSH bench:rpush "$entry" | rb_rate)
n=$(awk -v r="$rate0" -v s="$PHASE_SECONDS" 'BEGIN{printf "%d", r*s}')
rcli del bench:rpush >/dev/null
measure rpush redis-benchmark -h 127.0.0.1 -p "$rport" -c "$CONNS" -n "$n" --csv RPUSH bench:rpush "$entry"
rpush_rate=$(rb_rate "$tmp/rpush.out")
rpush_p50=$(rb_p50 "$tmp/rpush.out")
rpush_p99=$(rb_p99 "$tmp/rpush.out")
report rpush "a  redis-benchmark RPUSH (n=$n)" "$rpush_rate" "$(awk -v n="$n" -v r="$rpush_rate" 'BEGIN{print n/r}')"
rcli flushall >/dev/null

# b. the sidecar over HTTP.
rcli config resetstat >/dev/null
measure http wrk -t 2 -c "$CONNS" -d "${PHASE_SECONDS}s" --latency -s "$here/sessions_append.lua" "$api"
wrk_check "$tmp/http.out"
http_rate=$(wrk_rate "$tmp/http.out")
report http "b  sidecar POST .../entries (wrk -t2)" "$http_rate" "$(wrk_secs "$tmp/http.out")"
script_calls append
rcli flushall >/dev/null

# c. Cognee's append.
measure cognee "$PY" "$here/sessions_cognee.py" append --port "$rport" --threads "$CONNS" --seconds "$PHASE_SECONDS"
read -r cognee_rate cognee_p50 cognee_p99 <"$tmp/cognee.out"
report cognee "c  Cognee RPUSH+EXPIRE (redis-py, 16 threads)" "$cognee_rate" "$PHASE_SECONDS"
rcli flushall >/dev/null

# --- target 2: feedback on a 500-entry session ------------------------------
echo
echo "Feedback on a $ENTRIES-entry session, one client, random targets:"
measure cfb "$PY" "$here/sessions_cognee.py" feedback --port "$rport" --entries "$ENTRIES" --seconds "$PHASE_SECONDS"
read -r cfb_rate cfb_p50 cfb_p99 <"$tmp/cfb.out"
report cfb "d1 Cognee LRANGE/json.loads/LSET (redis-py)" "$cfb_rate" "$PHASE_SECONDS"

"$PY" "$here/sessions_cognee.py" preload-sidecar --api-port "$aport" --entries "$ENTRIES" >/dev/null
rcli config resetstat >/dev/null
measure sfb wrk -t 1 -c 1 -d "${PHASE_SECONDS}s" --latency -s "$here/sessions_feedback.lua" "$api" -- "$ENTRIES"
wrk_check "$tmp/sfb.out"
sfb_rate=$(wrk_rate "$tmp/sfb.out")
report sfb "d2 sidecar PUT .../feedback (wrk -c1)" "$sfb_rate" "$(wrk_secs "$tmp/sfb.out")"
script_calls feedback
measure pfb "$PY" "$here/sessions_cognee.py" sidecar-feedback --api-port "$aport" --entries "$ENTRIES" --seconds "$PHASE_SECONDS"
read -r pfb_rate pfb_p50 pfb_p99 <"$tmp/pfb.out"
report pfb "d3 sidecar PUT .../feedback (Python http.client)" "$pfb_rate" "$PHASE_SECONDS"

# --- summary ------------------------------------------------------------------
echo
echo "Latency p50 / p99:"
echo "  a  RPUSH                ${rpush_p50} / ${rpush_p99} ms"
echo "  b  sidecar append       $(wrk_pct "$tmp/http.out" 50%) / $(wrk_pct "$tmp/http.out" 99%)"
echo "  c  Cognee append        ${cognee_p50} / ${cognee_p99} ms"
echo "  d1 Cognee feedback      ${cfb_p50} / ${cfb_p99} ms"
echo "  d2 sidecar feedback     $(wrk_pct "$tmp/sfb.out" 50%) / $(wrk_pct "$tmp/sfb.out" 99%)"
echo "  d3 sidecar feedback py  ${pfb_p50} / ${pfb_p99} ms"
echo
awk -v a="$rpush_rate" -v b="$http_rate" -v c="$cognee_rate" -v d1="$cfb_rate" -v d2="$sfb_rate" -v d3="$pfb_rate" 'BEGIN{
	printf "Target 1a  sidecar append / redis-benchmark RPUSH = %.3f   (target >= 0.30: %s)\n", b/a, (b/a >= 0.3 ? "MET" : "NOT MET")
	printf "Target 1b  sidecar append / Cognee RPUSH+EXPIRE   = %.2f    (target > 1:     %s)\n", b/c, (b/c > 1 ? "MET" : "NOT MET")
	printf "Target 2   sidecar feedback / Cognee feedback     = %.1f (wrk), %.1f (Python client)   (target >= 5: %s)\n", d2/d1, d3/d1, (d2/d1 >= 5 ? "MET" : "NOT MET")
}'

# The five performance targets of the append and feedback paths, from this run.
echo
echo "Targets (this run; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
awk -v a="$rpush_rate" -v b="$http_rate" -v rb="${us_r[http]}" -v rc="${us_r[cognee]}" -v sb="${us_s[http]}" -v rf="${us_r[sfb]}" 'BEGIN{
	printf "  %-52s %-22s %-10s %s\n", "target", "measured", "goal", "verdict"
	printf "  %-52s %5.1f / %5.1f us = %4.2fx %-10s %s\n", "T1 Redis CPU per append / Cognee RPUSH+EXPIRE", rb, rc, rb/rc, "<= 1.0x", (rb/rc <= 0.7 ? "MET (moonshot 0.7x too)" : (rb/rc <= 1 ? "MET" : "NOT MET"))
	printf "  %-52s %5.1f us              %-10s %s\n", "T2 Redis CPU per feedback, 500 entries (wrk -c1)", rf, "<= 25 us", (rf <= 25 ? "MET" : "NOT MET")
	printf "  %-52s %5.1f us              %-10s %s\n", "T3 sidecar CPU per append (wrk -c16)", sb, "<= 25 us", (sb <= 25 ? "MET" : "NOT MET")
	printf "  %-52s %6.0f / %6.0f = %5.3fx %-10s %s\n", "T4 HTTP appends / redis-benchmark RPUSH, 16 conns", b, a, b/a, ">= 0.30x", (b/a >= 0.3 ? "MET" : "NOT MET")
	printf "  %-52s %s\n", "T5 no regression (p99 added, RSS)", "go run ./cmd/sidecar-bench -spawn -rate 1000 (not in this script)"
}'
