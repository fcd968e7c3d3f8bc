#!/usr/bin/env bash
# Builds llama.cpp's own benchmark tool, `llama-bench`, the reference the embedded back-end's
# benchmark compares itself with (`LLAMA_BENCH=... cargo bench -p imurun-model --bench
# embedded`). The `llama-cpp-2` crate vendors llama.cpp without its tools, so the sources come
# from the `llama-cpp-python` source package, which vendors the whole tree.
#
# Usage: scripts/build-llama-bench.sh [OUT_DIR]   (default ~/.cache/imurun-llama-bench)
# Prints the path of the built binary.
set -euo pipefail

out="${1:-$HOME/.cache/imurun-llama-bench}"
version="0.3.36"
mkdir -p "$out"
if [[ -x "$out/bin/llama-bench" ]]; then
    echo "$out/bin/llama-bench"
    exit 0
fi
cd "$out"
if [[ ! -f "llama_cpp_python-$version.tar.gz" ]]; then
    python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d . >&2
fi
rm -rf src
mkdir src
tar xzf "llama_cpp_python-$version.tar.gz" -C src --strip-components=3 \
    "llama_cpp_python-$version/vendor/llama.cpp"
cmake -S src -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON >&2
cmake --build build --target llama-bench -j "$(nproc)" >&2
mkdir -p bin
cp build/bin/llama-bench bin/
echo "$out/bin/llama-bench"
