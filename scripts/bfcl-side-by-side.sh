#!/usr/bin/env bash
# BFCL with one GGUF two ways, in one run: through imurun's text mode (the embedded back-end
# with its tool prompt, worked examples, prefill, grammar and repairs) and through llama.cpp's
# own `llama-server` with its native tool calling (`--jinja`, the question as it is, the
# calls the server parsed), built by scripts/build-llama-server.sh from the same llama.cpp.
# Both decode greedily; imurun is a release build, as llama-server is. Prints both score tables; the predictions go to OUT_DIR.
#
# Usage: scripts/bfcl-side-by-side.sh [--limit N] [--model GGUF] [--data DIR] [--out-dir DIR]
#        (defaults: every case, the default model, testdata/bfcl, ~/.cache/imurun-bfcl)
# A run stopped part way goes on where it stopped (the eval's --out files); add --fresh to
# start over.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
# shellcheck source=scripts/build-env
. scripts/build-env

limit=()
fresh=()
model="${IMURUN_MODEL:-${IMURUN_HOME:-$HOME/.imurun}/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
data="$repo/testdata/bfcl"
out_dir="$HOME/.cache/imurun-bfcl"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --limit) limit=(--limit "$2"); shift 2 ;;
        --model) model="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --out-dir) out_dir="$2"; shift 2 ;;
        --fresh) fresh=(--fresh); shift ;;
        *) echo "bfcl-side-by-side: unknown option $1" >&2; exit 2 ;;
    esac
done
if [[ ! -f "$model" ]]; then
    echo "bfcl-side-by-side: no model at $model (scripts/fetch-model.sh fetches the default)" >&2
    exit 1
fi
mkdir -p "$out_dir"

server="$(scripts/build-llama-server.sh)"
cargo build --workspace --release --quiet
imurun="$CARGO_TARGET_DIR/release/imurun"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$out_dir/llama-server.log"
"$server" --model "$model" --host 127.0.0.1 --port "$port" --jinja --temp 0 \
    --ctx-size 4096 --parallel 1 --n-predict 1024 >"$log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1800); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "bfcl-side-by-side: llama-server exited; its log:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done

tag="$(basename "$model" .gguf)"
echo "== imurun text mode (embedded $tag)"
"$imurun" eval bfcl --data "$data" --model "$model" "${limit[@]}" "${fresh[@]}" \
    --out "$out_dir/$tag-imurun.jsonl"
echo
echo "== llama-server native tool calls ($tag, --jinja)"
"$imurun" eval bfcl --data "$data" --model "openai:http://127.0.0.1:$port" --native-tools \
    "${limit[@]}" "${fresh[@]}" --out "$out_dir/$tag-llama-server.jsonl"
