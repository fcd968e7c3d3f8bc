#!/usr/bin/env bash
# Builds one of llama.cpp's own tools from the llama.cpp the embedded back-end runs, as the
# reference imurun compares itself with:
#
#   - `llama-bench`: the benchmark the embedded back-end's speed is measured against
#     (`scripts/build-llama-bench.sh`);
#   - `llama-server`: the OpenAI-compatible server the `openai:` back-end's tests and the
#     native-tool-calling BFCL column run against (`scripts/build-llama-server.sh`).
#
# - The engine (ggml, llama, common) is compiled from the very sources the
#   `llama-cpp-sys-2` crate vendors (found with `cargo metadata`), with the options its build
#   script passes to CMake for the current RUSTFLAGS: `GGML_NATIVE=ON` for
#   `-C target-cpu=native`, else `GGML_NATIVE=OFF` and one `GGML_<feature>=ON` per CPU
#   feature rustc enables (ggml's own defaults then add AVX2, FMA and F16C, but not
#   AVX-512); the `cc` crate's compiler flags; no curl, static libraries.
# - The crate vendors llama.cpp without its tools, so the tool's own files (the command line
#   and its loop, not the engine) come from the `llama-cpp-python` source package, whose
#   llama.cpp is of nearly the same weeks. `llama-bench` compiles against the crate's sources
#   unchanged. `llama-server` brings its multimodal library (`tools/mtmd`) along, and its one
#   call to a `common` helper the crate's llama.cpp lacks (opening an MCP configuration file,
#   which imurun never passes) is replaced with `std::ifstream`; it is built without its web
#   page (`tools/ui` with neither npm nor a download: the page's table is empty), since its
#   API is all imurun uses.
#
# Usage: scripts/build-llama-tool.sh llama-bench|llama-server [OUT_DIR]
#        (default OUT_DIR: tools/<tool> in the persistent target folder, $CARGO_TARGET_DIR,
#        else ~/.cache/imurun-target, so a warm CI run finds it built)
# Prints the path of the built binary. Rebuilds when the crate, the flags or the script
# change.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
tool="${1:-}"
case "$tool" in
    llama-bench | llama-server) ;;
    *)
        echo "usage: $0 llama-bench|llama-server [OUT_DIR]" >&2
        exit 2
        ;;
esac
tools="${CARGO_TARGET_DIR:-$HOME/.cache/imurun-target}/tools"
out="${2:-$tools/$tool}"
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
    echo "build-llama-tool: llama-cpp-sys-2's sources not found (run cargo fetch first)" >&2
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
# The benchmark is compiled as cargo's bench profile compiles the engine (`-O2 -g`); the
# server, which tests and evaluations only ask for replies, at `-O1` without debug
# information (about 7 minutes on two cores).
case "$tool" in
    llama-bench) build_type=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
    llama-server) build_type=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG"
        "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG") ;;
esac
options=("${build_type[@]}" -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF
    "-DCMAKE_C_FLAGS=$cflags" "-DCMAKE_CXX_FLAGS=$cflags"
    -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF)
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

# The script's comments do not count: only what it does.
stamp="$(printf '%s\n' "$tool" "$crate_dir" "$tool_version" "${options[*]}" |
    cat - <(grep -v '^ *#' "$0") | sha256sum | cut -c1-16)"
build="$out/build-$stamp"
if [[ -x "$build/bin/$tool" ]]; then
    echo "$build/bin/$tool"
    exit 0
fi

# The source package, kept once for every tool.
sdist_dir="$tools/llama-sources"
sdist="$sdist_dir/llama_cpp_python-$tool_version.tar.gz"
if [[ ! -f "$sdist" ]]; then
    mkdir -p "$sdist_dir"
    # Debian's python3 may lack pip; the test tools' environment (scripts/setup) has it.
    python=python3
    venv_python="${IMURUN_VENV:-$HOME/.cache/imurun-venv}/bin/python"
    if ! python3 -m pip --version >/dev/null 2>&1 && [[ -x "$venv_python" ]]; then
        python="$venv_python"
    fi
    "$python" -m pip download --quiet --no-deps --no-binary :all: \
        "llama-cpp-python==$tool_version" -d "$sdist_dir" >&2
fi

# The crate's llama.cpp, with the tool's own files added.
case "$tool" in
    llama-bench)
        parts=(tools/llama-bench)
        subdirectories=(llama-bench)
        ;;
    llama-server)
        # The server's multimodal library (mtmd) goes with it: the server calls it as the
        # package's llama.cpp declares it.
        parts=(tools/server tools/mtmd tools/ui/CMakeLists.txt tools/ui/sources.cmake
            tools/ui/ui.cpp.in tools/ui/ui.h.in scripts/ui-assets.cmake)
        subdirectories=(mtmd ui server)
        ;;
esac
src="$build/src"
rm -rf "$build"
mkdir -p "$src"
cp -R "$crate_dir/llama.cpp/." "$src/"
chmod -R u+w "$src"
vendored="llama_cpp_python-$tool_version/vendor/llama.cpp"
for part in "${parts[@]}"; do
    rm -rf "${src:?}/$part"
done
tar xzf "$sdist" -C "$build" "${parts[@]/#/$vendored/}"
for part in "${parts[@]}"; do
    mkdir -p "$(dirname "$src/$part")"
    mv "$build/$vendored/$part" "$src/$part"
done
rm -rf "$build/llama_cpp_python-$tool_version"
if [[ "$tool" == llama-server ]]; then
    # The one helper the server takes from a newer `common` than the crate's: opening its MCP
    # configuration file, which imurun never gives it.
    mcp="$src/tools/server/server-mcp.cpp"
    sed -i 's/std::ifstream f = fs_open_ifstream(\(.*\), std::ios::in);/std::ifstream f(\1, std::ios::in);/' "$mcp"
    if grep -q fs_open_ifstream "$mcp"; then
        echo "build-llama-tool: $mcp still calls fs_open_ifstream" >&2
        exit 1
    fi
fi
{
    printf 'find_package(Threads REQUIRED)\nllama_add_compile_flags()\n'
    printf 'add_subdirectory(%s)\n' "${subdirectories[@]}"
} > "$src/tools/CMakeLists.txt"

echo "build-llama-tool: $tool, llama.cpp from $crate_dir; ${options[*]}" >&2
cmake -S "$src" -B "$build/cmake" "${options[@]}" >&2
cmake --build "$build/cmake" --target "$tool" -j "$(nproc)" >&2
mkdir -p "$build/bin"
cp "$build/cmake/bin/$tool" "$build/bin/"
echo "$build/bin/$tool"
