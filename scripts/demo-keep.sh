#!/usr/bin/env bash
# Keep mode's agent-proposed tools, end to end, on a host of its own: start a Keep host on a
# free loopback port, deploy the scripted agent, have its cell propose a tool, show the review,
# approve it with a device key, call the tool from a new session, revoke it, show the call
# refused, and check the journal's chain. Each step is printed; any failure exits non-zero.
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
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
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

step "imurun keep init"
"$imurun" keep init | tee "$work/init.txt"
operator="$(grep -E '^imk_' "$work/init.txt" | head -1)"
[ -n "$operator" ] || fail "keep init printed no operator token"

step "imurun serve --keep on a free loopback port"
"$imurun" serve --keep >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  base="$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$work/serve.log" | head -1 || true)"
  [ -n "$base" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; fail "the host did not start"; }
  sleep 0.2
done
[ -n "$base" ] || fail "the host never said where it listens"
echo "listening on $base"

step "a token, a device and a ceiling for alice"
alice="$("$imurun" keep token create --user alice | field 'd["token"]')"
"$imurun" keep device enrol --out "$work/alice.key" --user alice --label demo >"$work/enrol.json"
code="$("$imurun" keep enrol-code --user alice | field 'd["code"]')"
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({k: d[k] for k in ('public_key', 'label', 'possession')} | {'enrol_code': sys.argv[2]}))" \
  "$work/enrol.json" "$code" >"$work/device.json"
api POST /v1/devices "$alice" "$work/device.json" | field '"device " + d["key_id"]'
now="$(date +%s)"
cat >"$work/ceiling.json" <<EOF
{"type": "imurun.ceiling", "user": "alice", "version": 1, "expires_at": $((now + 3600)),
 "egress": [], "credentials": [], "memory": "none", "model_socket": false,
 "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}}
EOF
"$imurun" keep sign --key "$keep_dir/policy.key" "$work/ceiling.json" >"$work/ceiling.signed.json"
api PUT /v1/ceilings/alice "$operator" "$work/ceiling.signed.json" | field '"ceiling version " + str(d.get("ceiling", d).get("version"))'

step "deploy the scripted agent (signed bundle, signed policy)"
# The build with every import (tools included) is the one a session can call tools from.
cargo build --release --quiet --target wasm32-wasip2 --manifest-path examples/keep/Cargo.toml \
  --target-dir "$CARGO_TARGET_DIR/keep-guests" -p scripted-agent --features http,model,memory,tools
cp "$guests/scripted_agent.wasm" "$work/agent.wasm"
agent="$work/agent.wasm"
sha="$(sha256sum "$agent" | cut -d' ' -f1)"
cat >"$work/policy.json" <<EOF
{"type": "imurun.policy", "agent": "maker", "version": 1, "expires_at": $((now + 3600)),
 "bundle_sha256": "$sha",
 "manifest": {"name": "maker", "version": 1, "description": "The scripted agent.",
   "egress": {"mode": "ask", "rules": [{"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}]},
   "memory": "read", "model_socket": true,
   "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20000}, "approval_timeout_s": 30}}
EOF
"$imurun" keep sign --key "$keep_dir/signer.key" --bundle "$agent" >"$work/bundle.sig"
"$imurun" keep sign --key "$keep_dir/policy.key" "$work/policy.json" >"$work/policy.signed.json"
python3 -c "
import base64, json, sys
print(json.dumps({'bundle': base64.b64encode(open(sys.argv[1], 'rb').read()).decode(),
                  'bundle_signature': json.load(open(sys.argv[2])),
                  'policy': json.load(open(sys.argv[3]))}))" \
  "$agent" "$work/bundle.sig" "$work/policy.signed.json" >"$work/deploy.json"
api POST /v1/agents "$operator" "$work/deploy.json" | field '"deployed " + d["name"] + "@" + str(d["version"])'

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
id="$(api GET '/v1/proposals?kind=tool' "$alice" | field 'd["tools"][0]["id"]')"

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
