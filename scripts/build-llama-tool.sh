#!/usr/bin/env bash
# Builds llama.cpp's own benchmark tool, `llama-bench`, from the llama.cpp the embedded
# back-end runs, as the reference its benchmark compares itself with:
#
#   LLAMA_BENCH=$(scripts/build-llama-bench.sh) cargo bench --workspace --bench embedded
#
# - The engine (ggml, llama, common) is compiled from the very sources the `llama-cpp-sys-2`
#   crate vendors (found with `cargo metadata`), with the options its build script passes
#   to CMake for the current RUSTFLAGS: `GGML_NATIVE=ON` for `-C target-cpu=native`, else
#   `GGML_NATIVE=OFF` and one `GGML_<feature>=ON` per CPU feature rustc enables (ggml's own
#   defaults then add AVX2, FMA and F16C, but not AVX-512); the `cc` crate's compiler flags;
#   no curl, static libraries; `RelWithDebInfo` (`-O2 -g`), as cargo's bench profile, which
#   has line tables, builds it.
# - The crate vendors llama.cpp without its tools, so the tool's own two files
#   (`tools/llama-bench/`, the command line and timing loop, not the engine) come from the
#   `llama-cpp-python` source package on PyPI, whose llama.cpp is a few weeks older; they
#   compile against the crate's sources unchanged. The tool reports the crate's ggml version.
#
# Usage: scripts/build-llama-bench.sh [OUT_DIR]   (default ~/.cache/imurun-llama-bench)
# Prints the path of the built binary. Rebuilds when the crate, the flags or the script
# change.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$HOME/.cache/imurun-llama-bench}"
tool_version="0.3.36"
mkdir -p "$out"

crate_dir="$(cd "$repo" && cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, os, sys
for package in json.load(sys.stdin)["packages"]:
    if package["name"] == "llama-cpp-sys-2":
        print(os.path.dirname(package["manifest_path"]))
        break
')"
if [[ -z "$crate_dir" || ! -d "$crate_dir/llama.cpp" ]]; then
    echo "build-llama-bench: llama-cpp-sys-2's sources not found (run cargo fetch first)" >&2
    exit 1
fi

# The CMake options llama-cpp-sys-2's build.rs derives from the Rust flags, and the compiler
# flags the `cc` crate gives CMake through it.
rustflags="${RUSTFLAGS:-}"
march="x86-64"
if [[ "$rustflags" =~ target-cpu=([^ ]+) ]]; then
    march="${BASH_REMATCH[1]}"
fi
cflags="-ffunction-sections -fdata-sections -fPIC -m64 -march=$march"
options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF
    "-DCMAKE_C_FLAGS=$cflags" "-DCMAKE_CXX_FLAGS=$cflags"
    -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF)
if [[ "$march" == "native" ]]; then
    options+=(-DGGML_NATIVE=ON)
else
    options+=(-DGGML_NATIVE=OFF)
    # shellcheck disable=SC2086
    features="$(rustc --print cfg $rustflags | sed -n 's/^target_feature="\(.*\)"$/\1/p')"
    for feature in $features; do
        case "$feature" in
            avx) options+=(-DGGML_AVX=ON) ;;
            avx2) options+=(-DGGML_AVX2=ON) ;;
            avx512bf16) options+=(-DGGML_AVX512_BF16=ON) ;;
            avx512vbmi) options+=(-DGGML_AVX512_VBMI=ON) ;;
            avx512vnni) options+=(-DGGML_AVX512_VNNI=ON) ;;
            avxvnni) options+=(-DGGML_AVX_VNNI=ON) ;;
            bmi2) options+=(-DGGML_BMI2=ON) ;;
            f16c) options+=(-DGGML_F16C=ON) ;;
            fma) options+=(-DGGML_FMA=ON) ;;
            sse4.2) options+=(-DGGML_SSE42=ON) ;;
        esac
    done
fi

stamp="$(printf '%s\n' "$crate_dir" "$tool_version" "${options[*]}" | cat - "$0" | sha256sum | cut -c1-16)"
build="$out/build-$stamp"
if [[ -x "$build/bin/llama-bench" ]]; then
    echo "$build/bin/llama-bench"
    exit 0
fi

sdist="$out/llama_cpp_python-$tool_version.tar.gz"
if [[ ! -f "$sdist" ]]; then
    python3 -m pip download --quiet --no-deps --no-binary :all: \
        "llama-cpp-python==$tool_version" -d "$out" >&2
fi

# The crate's llama.cpp, with the one tool added.
src="$build/src"
rm -rf "$build"
mkdir -p "$src"
cp -R "$crate_dir/llama.cpp/." "$src/"
chmod -R u+w "$src"
rm -rf "$src/tools/llama-bench"
tar xzf "$sdist" -C "$build" "llama_cpp_python-$tool_version/vendor/llama.cpp/tools/llama-bench"
mv "$build/llama_cpp_python-$tool_version/vendor/llama.cpp/tools/llama-bench" "$src/tools/"
rm -rf "$build/llama_cpp_python-$tool_version"
printf 'find_package(Threads REQUIRED)\nllama_add_compile_flags()\nadd_subdirectory(llama-bench)\n' \
    > "$src/tools/CMakeLists.txt"

echo "build-llama-bench: llama.cpp from $crate_dir; ${options[*]}" >&2
cmake -S "$src" -B "$build/cmake" "${options[@]}" >&2
cmake --build "$build/cmake" --target llama-bench -j "$(nproc)" >&2
mkdir -p "$build/bin"
cp "$build/cmake/bin/llama-bench" "$build/bin/"
echo "$build/bin/llama-bench"
