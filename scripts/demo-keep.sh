#!/usr/bin/env bash
# Keep mode end to end, on a host of its own. First the quick start (docs/keep/quickstart.md),
# command for command: keep init, the host with the embedded model, a person added, her
# ceiling set, the example agent built and deployed, a local page; then alice's part through
# the API and the command line: she talks to the agent in words, approves the tool it proposes
# with her device key, and approves its request. Then agent-proposed tools in depth with the
# scripted agent: a proposal, its review, approval, a call, revoke, a tainted session's
# proposal, a denial, and the journal's chain. Each step is printed; any failure exits non-zero.
#
# Where the quick start says `scripts/imurun`, this runs the test build's imurun (the same
# commands; scripts/test has built it), and it uses free ports for 8484 and 8080.
#
#     scripts/demo-keep.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/build-env
. scripts/build-env

step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'demo-keep: %s\n' "$*" >&2; exit 1; }

step "build imurun and the guests of examples/keep"
# The test build's imurun (dev-dependencies unify features, so a plain `cargo build` would
# build llama.cpp a second time); after scripts/test's own `cargo test` it is already built.
cargo test --workspace --no-run --quiet
cargo build --release --quiet --target wasm32-wasip2 \
  --manifest-path examples/keep/Cargo.toml --target-dir "$CARGO_TARGET_DIR/keep-guests"
imurun="$CARGO_TARGET_DIR/debug/imurun"
guests="$CARGO_TARGET_DIR/keep-guests/wasm32-wasip2/release"

work="$(mktemp -d)"
server_pid=""
page_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$page_pid" ]; then kill "$page_pid" 2>/dev/null || true; wait "$page_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
export IMURUN_HOME="$work/home"
export IMURUN_ADDR="127.0.0.1:0"
keep_dir="$IMURUN_HOME/keep"

# One HTTP call: METHOD PATH TOKEN [BODY-FILE]; prints the JSON answer, fails on a non-2xx.
api() {
  python3 - "$base" "$@" <<'PY'
import json, sys, urllib.request, urllib.error
base, method, path, token = sys.argv[1:5]
data = open(sys.argv[5], "rb").read() if len(sys.argv) > 5 else None
request = urllib.request.Request(base + path, data=data, method=method)
request.add_header("Authorization", "Bearer " + token)
if data is not None:
    request.add_header("Content-Type", "application/json")
try:
    with urllib.request.urlopen(request) as answer:
        sys.stdout.write(answer.read().decode())
except urllib.error.HTTPError as error:
    sys.stderr.write(f"{method} {path}: {error.code} {error.read().decode()}\n")
    sys.exit(1)
PY
}
# A field of JSON on stdin: FIELD is a Python expression over `d`.
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

step "1. imurun keep init"
"$imurun" keep init | tee "$work/init.txt"
operator="$(grep -E '^imk_' "$work/init.txt" | head -1)"
[ -n "$operator" ] || fail "keep init printed no operator token"

step "2. export IMURUN_KEEP_TOKEN (the operator's)"
export IMURUN_KEEP_TOKEN="$operator"

# A free port for the local page of step 8, opened to cells as 8080 is in the quick start.
page_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

step "3. imurun serve --keep (the embedded model; loopback port $page_port opened to cells)"
model="${IMURUN_MODEL:-$HOME/.imurun/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
[ -f "$model" ] || fail "the default model is not at $model: run scripts/fetch-model.sh"
IMURUN_KEEP_EGRESS_LOOPBACK_PORTS="$page_port" "$imurun" serve --keep --model "$model" >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  base="$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$work/serve.log" | head -1 || true)"
  [ -n "$base" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; fail "the host did not start"; }
  sleep 0.2
done
[ -n "$base" ] || fail "the host never said where it listens"
export IMURUN_URL="$base"
echo "listening on $base"

step "4. imurun keep people add alice"
"$imurun" keep people add alice | tee "$work/alice.txt"
alice="$(awk '$1 == "token" {print $2}' "$work/alice.txt")"
code="$(awk '$1 == "enrolment" && $2 == "code" {print $3}' "$work/alice.txt")"
[ -n "$alice" ] && [ -n "$code" ] || fail "keep people add printed no token or code"

step "5. imurun keep ceiling set alice examples/keep/packs/helper/ceiling.json (port $page_port for 8080)"
sed "s/8080/$page_port/" examples/keep/packs/helper/ceiling.json >"$work/ceiling.json"
"$imurun" keep ceiling set alice "$work/ceiling.json"

step "6. scripts/build-examples"
scripts/build-examples

step "7. imurun keep deploy examples/keep/packs/helper"
"$imurun" keep deploy examples/keep/packs/helper | tee "$work/deployed.txt"
grep -q '^deployed helper version 1' "$work/deployed.txt" || fail "the example agent was not deployed"

step "8. python3 -m http.server $page_port --bind 127.0.0.1"
python3 -m http.server "$page_port" --bind 127.0.0.1 --directory "$work" >"$work/page.log" 2>&1 &
page_pid=$!
echo "the local page of the quick start" >"$work/page.txt"
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$page_port/page.txt" >/dev/null 2>&1 && break
  sleep 0.1
done

step "9. alice: a device, a conversation in words, the tool it proposes approved, its request approved"
"$imurun" keep device enrol --out "$work/alice.key" --user alice --label demo >"$work/enrol.json"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({k: d[k] for k in ('public_key', 'label', 'possession')} | {'enrol_code': sys.argv[2]}))" \
  "$work/enrol.json" "$code" >"$work/device.json"
api POST /v1/devices "$alice" "$work/device.json" | field '"device " + d["key_id"]'
echo '{"agent": "helper"}' >"$work/session.json"
talk="$(api POST /v1/sessions "$alice" "$work/session.json" | field 'd["id"]')"
# Says $2 in words to session $1 and prints the agent's reply.
tell() {
  python3 -c "import json,sys; print(json.dumps({'text': sys.argv[1]}))" "$2" >"$work/told.json"
  api POST "/v1/sessions/$1/messages" "$alice" "$work/told.json" | field 'd["replies"][0]'
}
tell "$talk" "hello, what can you do?"
tell "$talk" "I need a tool that fetches http://127.0.0.1:$page_port/"
fetch_id="$(api GET '/v1/proposals?kind=tool' "$alice" | field '[t["id"] for t in d["tools"] if t["name"] == "fetch"][0]')"
"$imurun" keep approve "$fetch_id" --device "$work/alice.key" --token "$alice"
# The tool's request waits for alice: approved here once it is listed.
(
  for _ in $(seq 1 300); do
    waiting="$(api GET /v1/approvals "$alice" | field '" ".join(a["id"] for a in d["approvals"])')"
    if [ -n "$waiting" ]; then
      echo '{"approve": true}' >"$work/approve.json"
      api POST "/v1/approvals/$waiting" "$alice" "$work/approve.json" >/dev/null
      exit 0
    fi
    sleep 0.1
  done
  exit 1
) &
approver=$!
fetched="$(tell "$talk" "fetch http://127.0.0.1:$page_port/page.txt")"
wait "$approver" || fail "the tool's request never waited for alice"
echo "the agent answered: $fetched"
case "$fetched" in
  *"the local page of the quick start"*) ;;
  *) fail "the approved request did not bring the page back" ;;
esac
api GET "/v1/sessions/$talk/messages" "$alice" | field '"\n".join(e["role"] + ": " + e["text"][:80].replace("\n", " ") for e in d["entries"])'

step "imurun keep deploy: the scripted agent, from a pack folder"
# The build with every import (tools included) is the one a session can call tools from.
mkdir -p "$work/maker"
cp "$guests/scripted_agent_full.wasm" "$work/maker/agent.wasm"
cat >"$work/maker/manifest.json" <<EOF
{"name": "maker", "version": 1, "description": "The scripted agent.",
 "egress": {"mode": "ask", "rules": [{"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}]},
 "memory": "read", "model_socket": true,
 "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20000}, "approval_timeout_s": 30}
EOF
"$imurun" keep deploy "$work/maker"

# Sends one message to session $1 (JSON in $2) and prints the agent's first reply.
say() {
  python3 -c "import json,sys; print(json.dumps({'text': sys.argv[1]}))" "$2" >"$work/message.json"
  api POST "/v1/sessions/$1/messages" "$alice" "$work/message.json" | field 'd["replies"][0]'
}
new_session() {
  echo '{"agent": "maker"}' >"$work/session.json"
  api POST /v1/sessions "$alice" "$work/session.json" | field 'd["id"]'
}

step "alice's session: the agent's cell proposes a tool"
session="$(new_session)"
echo "session $session"
base64 -w0 "$guests/pure_tool.wasm" | fold -w 40000 >"$work/bundle.chunks"
while IFS= read -r chunk || [ -n "$chunk" ]; do
  say "$session" "{\"buffer\": \"$chunk\"}" >/dev/null
done <"$work/bundle.chunks"
proposed="$(say "$session" '{"emit": {"type": "tool.propose", "name": "echo", "description": "Echoes its arguments.", "bundle": "$buffer", "manifest": {"name": "echo", "version": 1, "resources": {"memory_mb": 16, "cpu_ms": 200, "timeout_ms": 2000}, "approval_timeout_s": 30}}}')"
echo "the cell's emit: $proposed"
[ "$proposed" = "emitted" ] || fail "the proposal was refused: $proposed"

step "imurun keep proposals"
export IMURUN_KEEP_TOKEN="$alice"
"$imurun" keep proposals --url "$base"
id="$(api GET '/v1/proposals?kind=tool' "$alice" | field '[t["id"] for t in d["tools"] if t["name"] == "echo"][0]')"

step "imurun keep show $id"
"$imurun" keep show "$id" --url "$base"

step "imurun keep approve $id --device alice.key"
"$imurun" keep approve "$id" --device "$work/alice.key" --url "$base"
"$imurun" keep tools --url "$base"

step "a new session calls u/alice/echo"
called="$(new_session)"
answer="$(say "$called" '{"tool": {"name": "echo", "args": {"hello": "world"}}}')"
echo "the tool answered: $answer"
[ "$answer" = '{"echo":{"hello":"world"}}' ] || fail "the tool's answer was not its echo"

step "imurun keep revoke echo"
"$imurun" keep revoke echo --url "$base"
answer="$(say "$called" '{"tool": {"name": "echo", "args": {}}}')"
echo "the call after the revoke: $answer"
case "$answer" in
  "refused: no tool named"*) ;;
  *) fail "the revoked tool still answered" ;;
esac

step "a tainted session proposes a tool: the approval needs the confirm, and a device clears its taint"
tainted="$(new_session)"
echo '{"name": "notes.txt", "text": "a file from outside"}' >"$work/file.json"
api POST "/v1/sessions/$tainted/files" "$alice" "$work/file.json" >/dev/null
while IFS= read -r chunk || [ -n "$chunk" ]; do
  say "$tainted" "{\"buffer\": \"$chunk\"}" >/dev/null
done <"$work/bundle.chunks"
proposed="$(say "$tainted" '{"emit": {"type": "tool.propose", "name": "echo", "description": "Echoes, again.", "bundle": "$buffer", "manifest": {"name": "echo", "version": 2, "resources": {"memory_mb": 16, "cpu_ms": 200, "timeout_ms": 2000}, "approval_timeout_s": 30}}}')"
[ "$proposed" = "emitted" ] || fail "the second proposal was refused: $proposed"
id2="$(api GET '/v1/proposals?kind=tool' "$alice" | field '[t for t in d["tools"] if t["state"] == "pending"][0]["id"]')"
"$imurun" keep show "$id2" --url "$base"
if "$imurun" keep approve "$id2" --device "$work/alice.key" --url "$base"; then
  fail "a tainted proposal was approved without --confirm-tainted"
fi
"$imurun" keep approve "$id2" --device "$work/alice.key" --confirm-tainted --url "$base"
"$imurun" keep tools --url "$base"
"$imurun" keep clear-taint echo --device "$work/alice.key" --url "$base"
"$imurun" keep tools --url "$base"

step "a third proposal, denied on the device"
while IFS= read -r chunk || [ -n "$chunk" ]; do
  say "$tainted" "{\"buffer\": \"$chunk\"}" >/dev/null
done <"$work/bundle.chunks"
proposed="$(say "$tainted" '{"emit": {"type": "tool.propose", "name": "other", "description": "Not wanted.", "bundle": "$buffer", "manifest": {"name": "other", "version": 1, "resources": {"memory_mb": 16, "cpu_ms": 200, "timeout_ms": 2000}, "approval_timeout_s": 30}}}')"
[ "$proposed" = "emitted" ] || fail "the third proposal was refused: $proposed"
id3="$(api GET '/v1/proposals?kind=tool' "$alice" | field '[t for t in d["tools"] if t["state"] == "pending"][0]["id"]')"
"$imurun" keep deny "$id3" --device "$work/alice.key" --url "$base"
"$imurun" keep proposals --url "$base"

step "imurun keep journal verify"
"$imurun" keep journal verify
api GET /v1/journal "$alice" | field '"\n".join(e["kind"] + " " + str(e["detail"].get("action", "")) + " " + e["subject"] for e in reversed(d["entries"]))'

step "the demo passed"
