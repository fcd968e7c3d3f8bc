#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server` from the llama.cpp the embedded back-end runs: see
# build-llama-tool.sh. Usage: scripts/build-llama-server.sh [OUT_DIR]; prints the binary's path.
exec "$(dirname "$0")/build-llama-tool.sh" llama-server "$@"
