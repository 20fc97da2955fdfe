#!/bin/sh
# A tiny example agent for the compose stack: it talks to the sidecar the way
# an agent pod would, so the dashboard has data. POSIX sh + curl only.
set -u
S=${SIDECAR_URL:-http://sidecar:7480}
AUTH=""
[ -n "${SIDECAR_API_TOKEN:-}" ] && AUTH="Authorization: Bearer ${SIDECAR_API_TOKEN}"
models="gpt-4o-mini claude-sonnet-4 gemini-2.5-flash mistral-small-latest"

post() { curl -fsS -m 5 -H "Content-Type: application/json" ${AUTH:+-H "$AUTH"} -X "$1" "$S$2" -d "$3" >/dev/null || echo "agent: $1 $2 failed"; }

until curl -fsS -m 2 "${SIDECAR_OPS_URL:-http://sidecar:9464}/readyz" >/dev/null; do sleep 1; done
echo "agent: sidecar ready at $S"

n=0
while :; do
  n=$((n + 1))
  user="user-$((n % 7))"
  session="chat-$n"
  base="/v1/users/$user/sessions/$session"
  turns=$(( (n % 4) + 1 ))
  t=1
  while [ "$t" -le "$turns" ]; do
    model=$(echo $models | cut -d' ' -f$(( (n + t) % 4 + 1 )))
    post POST "$base/entries" "{\"question\":\"question $t of session $n\",\"answer\":\"answer $t\",\"qa_id\":\"q$t\"}"
    post POST "$base/usage" "{\"model\":\"$model\",\"tokens_in\":$(( 200 + n % 300 )),\"tokens_out\":$(( 50 + t * 20 ))}"
    post PUT "$base/entries/q$t/feedback" "{\"feedback_score\":$(( (n + t) % 5 + 1 ))}"
    t=$((t + 1))
  done
  # Take the shared lock for a moment (other agents queue behind it).
  grant=$(curl -fsS -m 5 -H "Content-Type: application/json" ${AUTH:+-H "$AUTH"} \
    "$S/v1/locks/graph-writes" -d '{"owner":"example-agent","ttl_ms":5000,"wait_ms":2000}' 2>/dev/null)
  token=$(echo "$grant" | sed -n 's/.*"token":"\([0-9a-f]*\)".*/\1/p')
  if [ -n "$token" ]; then
    sleep 0.2
    post DELETE "/v1/locks/graph-writes" "{\"token\":\"$token\"}"
  fi
  case $((n % 5)) in
    0|1|2) post POST "$base/complete" '{}' ;;
    3) post POST "$base/fail" '{}' ;;
    *) : ;; # left running: reads as abandoned after SESSION_ABANDON_AFTER_SECONDS
  esac
  sleep "${AGENT_SLEEP:-1}"
done
