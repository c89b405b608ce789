#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a lent GPU machine into .gpu/ (ignored by git), for
# the device tool's `carry`: that machine has CUDA, Python, CMake and ninja but no Vulkan loader,
# no glslc and none of the build's -dev libraries, and no network. So the build is made here and
# carried, in three solid xz archives:
#   programs.tar.xz
#     bin/      vkllm, vkllm-bench-matvec, vkllm-random-model (stripped copies of BUILD_DIR's)
#     tests/    the GPU test programs (tests/gpu, tests/ops, tests/model; stripped): one stream,
#               so their shared SPIR-V and code are stored once
#   support.tar.xz
#     lib/      Debian's Vulkan loader (libvulkan.so.1), glvnd's libGLdispatch.so.0 (the NVIDIA
#               ICD needs it) and any other library the programs need beyond glibc, libstdc++ and
#               libgcc_s (the CUDA image has those, and a newer libstdc++ than this build's)
#     oracle/   llama.cpp's Vulkan build from ../shared/tools/llama-oracle: llama-bench-lite,
#               llama-quantize-lite and the libraries they load (libllama, libggml-base,
#               libggml-vulkan, the generic CPU backend), stripped
#     shared/   stories260K-F32.gguf and the llama-bpe and llama-spm vocabularies; gpu-check.sh
#               makes stories260K's F16, Q8_0 and Q4_0 files from the F32 one with
#               llama-quantize-lite, which writes them byte for byte (MANIFEST holds their sha256)
#   validation.tar.xz
#     layers/   the Khronos validation layer and its manifest (the tests run with it)
#   MANIFEST    commit, build, date, what was left out, every file's size and sha256, the holes
# The tree itself travels too (tracked files: the golden data, assets/zoo), so bytes of a tree
# file that a binary embeds (vkllm holds assets/zoo/zoo-dense.gguf) are zeroed in the archive
# and put back from the tree by gpu-check.sh, which checks every sha256.
#
#   scripts/gpu-pack.sh [BUILD_DIR]     (default: $VKLLM_BUILD_DIR, else build)
#   GPU_PACK_BUILD=0        do not build (pack what BUILD_DIR has)
#   GPU_PACK_BUILD_CMD=CMD  build with `CMD TARGET...` (default: flock /tmp/vkllm-build.lock
#                           cmake --build BUILD_DIR -j$(nproc) --target TARGET...)
#   GPU_PACK_LIMIT_MIB=N    the device tool's limit on what travels, tree included (default 64)
#   GPU_PACK_TESTS=REGEX    only the test programs whose name matches
#   GPU_PACK_KEEP=DIR       reuse DIR/support.tar.xz and DIR/validation.tar.xz from an earlier pack
#   ORACLE_HOME, VKLLM_SHARED_DIR   as for scripts/bench-compare.sh
#
# The tree (tracked files and untracked ones git does not ignore) as scripts/gpu-slim-branch.sh
# leaves it (the device call goes from that branch) and .gpu/ must stay under the limit less 256 KiB. When they do not, it leaves out, in this order, the test programs that are
# neither kernels nor goldens (optional_tests below), then the validation layer, and says so
# (MANIFEST's "dropped" line; gpu-check.sh records it); past that it fails. docs/gpu-check.md
# has the device call that carries .gpu.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib/gpu-env.sh
source "$(dirname "$0")/lib/gpu-env.sh"
build=${1:-${VKLLM_BUILD_DIR:-$root/build}}
[[ $build = /* ]] || build=$root/$build
out=$root/.gpu
gpu_env_local "$root" "$build"  # oracle, shared
limit_mib=${GPU_PACK_LIMIT_MIB:-64}

die() { echo "gpu-pack: $*" >&2; exit 1; }
note() { echo "gpu-pack: $*" >&2; }
[[ -d $build ]] || die "no build directory $build"
[[ -x $oracle/llama-bench-lite && -x $oracle/llama-quantize-lite ]] ||
    die "no llama-oracle in $oracle (run ../shared/tools/llama-oracle/setup.sh)"
for f in stories260K/stories260K-F32.gguf vocab/ggml-vocab-llama-bpe.gguf vocab/ggml-vocab-llama-spm.gguf; do
    [[ -f $shared/models/$f ]] || die "no $shared/models/$f"
done

# The GPU test programs: every tests/{gpu,ops,model}/test_*.cpp (tests/CMakeLists.txt names them
# LAYER_test_NAME) but the CPU-only ones, which CI runs anyway.
cpu_only=" model_test_random_model model_test_random_model_families model_test_spec_errors "
# Neither kernels nor goldens: left out first when the pack does not fit.
optional_tests=(model_test_dispatch_counts model_test_forward model_test_norm_in_matvec model_test_probes model_test_replay)
tests=()
for src in "$root"/tests/{gpu,ops,model}/test_*.cpp; do
    layer=$(basename "$(dirname "$src")")
    name=${layer}_$(basename "$src" .cpp)
    [[ $cpu_only = *" $name "* ]] && continue
    # GPU_PACK_TESTS=REGEX packs only the test programs whose name matches (each is about 20 MB
    # unpacked: all of them no longer fit the 64 MiB a call carries beside the tree).
    [[ -n ${GPU_PACK_TESTS:-} && ! $name =~ ${GPU_PACK_TESTS} ]] && continue
    tests+=("$name")
done
targets=(vkllm vkllm-bench-matvec vkllm-random-model "${tests[@]}")
if [[ ${GPU_PACK_BUILD:-1} != 0 ]]; then
    note "building ${#targets[@]} targets in $build"
    if [[ -n ${GPU_PACK_BUILD_CMD:-} ]]; then
        # shellcheck disable=SC2086  # a command and its words
        $GPU_PACK_BUILD_CMD "${targets[@]}" >&2
    else
        flock /tmp/vkllm-build.lock cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >&2
    fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/vkllm-gpu
mkdir -p "$stage"/{bin,tests,lib,layers,oracle/lib,shared/models/stories260K,shared/models/vocab}

for b in vkllm vkllm-bench-matvec vkllm-random-model; do
    [[ -x $build/bin/$b ]] || die "no $build/bin/$b"
    strip --strip-unneeded -o "$stage/bin/$b" "$build/bin/$b"
done
for t in "${tests[@]}"; do
    [[ -x $build/tests/$t ]] || die "no $build/tests/$t (build it, or GPU_PACK_BUILD=1)"
    strip --strip-unneeded -o "$stage/tests/$t" "$build/tests/$t"
done

# The oracle: its two programs and the libraries they load. ggml picks the best CPU backend it
# finds in GGML_BACKEND_DIR; with every layer on the GPU the generic one is enough (and
# llama-quantize-lite quantizes with ggml-base's own code).
vkdir=$(dirname "$(readlink -f "$oracle/lib/libggml-base.so")")
for p in llama-bench-lite llama-quantize-lite; do strip --strip-unneeded -o "$stage/oracle/$p" "$oracle/$p"; done
for l in libggml-base.so libggml-vulkan.so libggml-cpu-x64.so "$(basename "$vkdir"/libllama.vulkan.v*.so)" \
    "$(basename "$vkdir"/libggml.vulkan.v*.so)"; do
    [[ -f $vkdir/$l ]] || die "no $vkdir/$l"
    strip --strip-unneeded -o "$stage/oracle/lib/$l" "$vkdir/$l"
done

# The Vulkan loader, glvnd's dispatch library, and the validation layer with a manifest that
# names it beside itself.
# (awk reads to the end: leaving early would kill ldconfig with SIGPIPE, which pipefail and set -e
# turn into a silent exit where the library list is long.)
libpath() { ldconfig -p | awk -v n="$1" '$1 == n && /x86-64/ && !found { print $NF; found = 1 }'; }
for l in libvulkan.so.1 libGLdispatch.so.0; do
    p=$(libpath "$l")
    [[ -n $p ]] || die "no $l here (Debian: libvulkan1, libglvnd0)"
    cp -L "$p" "$stage/lib/$l"
done
# Debian's glvnd libraries and loader as packages: on the H200 image the NVIDIA ICD
# (libGLX_nvidia.so.0) answered vkCreateInstance only once they were installed system-wide
# (gpu-check.sh unpacks them into / when the loader finds no GPU); 0.4 MB in all.
debs=${XDG_CACHE_HOME:-$HOME/.cache}/vkllm-gpu-debs
mkdir -p "$debs"
for d in libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2; do
    ls "$debs/${d}_"*.deb >/dev/null 2>&1 && continue
    (cd "$debs" && apt-get -q download "$d" >&2) || die "cannot download $d (apt-get download; apt-get update first?)"
done
mkdir -p "$stage/debs" && cp "$debs"/*.deb "$stage/debs/"
layer_json=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
[[ -f $layer_json ]] || die "no $layer_json (Debian: vulkan-validationlayers)"
layer_so=$(libpath libVkLayer_khronos_validation.so)
[[ -n $layer_so ]] || die "no libVkLayer_khronos_validation.so"
cp -L "$layer_so" "$stage/layers/libVkLayer_khronos_validation.so"
sed 's#"library_path": *"[^"]*"#"library_path": "./libVkLayer_khronos_validation.so"#' "$layer_json" \
    >"$stage/layers/VkLayer_khronos_validation.json"

# Every other library a packed program needs, beyond what any Linux with glibc has.
base=" libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1 "
have() { [[ -e $stage/lib/$1 || -e $stage/oracle/lib/$1 || -e $stage/layers/$1 ]]; }
for _ in 1 2 3; do  # a copied library can need another
    for f in "$stage"/bin/* "$stage"/tests/* "$stage"/lib/* "$stage"/layers/*.so "$stage"/oracle/llama-* "$stage"/oracle/lib/*; do
        for n in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            [[ $base = *" $n "* ]] && continue
            have "$n" && continue
            p=$(libpath "$n")
            [[ -n $p ]] || die "$(basename "$f") needs $n, which is not installed here"
            note "also packing $n (needed by $(basename "$f"))"
            cp -L "$p" "$stage/lib/$n"
        done
    done
done

# Models: stories260K's F32 file (the others are made from it) and two vocabularies.
cp "$shared/models/stories260K/stories260K-F32.gguf" "$shared/models/stories260K/README.md" "$stage/shared/models/stories260K/"
cp "$shared/models/vocab/ggml-vocab-llama-bpe.gguf" "$shared/models/vocab/ggml-vocab-llama-spm.gguf" "$stage/shared/models/vocab/"

# The holes: a tree file that a binary holds byte for byte is zeroed there ("hole BINARY OFFSET
# LENGTH TREE_PATH" in MANIFEST; the sha256 sums are taken before), and gpu-check.sh restores it
# from the tree, which travels anyway (vkllm embeds assets/zoo/zoo-dense.gguf).
sums=$work/sums
(cd "$stage" && find . -type f | sed 's#^\./##' | sort | while read -r f; do
    echo "file $f $(stat -c %s "$f") $(sha256sum "$f" | cut -d' ' -f1)"
done) >"$sums"
python3 - "$root" "$stage" >"$work/holes" <<'HOLES'
import os, sys
root, stage = sys.argv[1], sys.argv[2]
blobs = []
for d in ("assets/zoo",):
    for name in sorted(os.listdir(os.path.join(root, d))):
        p = os.path.join(root, d, name)
        if os.path.isfile(p) and os.path.getsize(p) >= 65536:
            blobs.append((os.path.join(d, name), open(p, "rb").read()))
for sub in ("bin", "tests"):
    for name in sorted(os.listdir(os.path.join(stage, sub))):
        path = os.path.join(stage, sub, name)
        data = bytearray(open(path, "rb").read())
        changed = False
        for rel, blob in blobs:
            at = data.find(blob)
            while at >= 0:
                print(f"hole {sub}/{name} {at} {len(blob)} {rel}")
                data[at:at + len(blob)] = bytes(len(blob))
                changed = True
                at = data.find(blob, at + len(blob))
        if changed:
            open(path, "wb").write(data)
HOLES

# What travels besides .gpu/: the tree (tracked files, and untracked ones git does not ignore) as
# scripts/gpu-slim-branch.sh leaves it, without scripts/lib/gpu-slim-paths.txt's paths.
tree_bytes=$(cd "$root" && { git ls-files -z; git ls-files -z -o --exclude-standard; } |
    python3 -c 'import fnmatch,os,sys
slim = [l.strip() for l in open("scripts/lib/gpu-slim-paths.txt") if l.strip() and not l.startswith("#")]
def kept(f): return not any(f == p or f.startswith(p + "/") or fnmatch.fnmatch(f, p) for p in slim)
print(sum(os.path.getsize(f) for f in sys.stdin.read().split("\0")
          if f and os.path.isfile(f) and not os.path.islink(f) and kept(f)))')
limit=$((limit_mib * 1048576 - 262144))
room=$((limit - tree_bytes - 16384))  # MANIFEST takes a few KiB
note "the slim tree (scripts/gpu-slim-branch.sh) takes $((tree_bytes / 1024)) KiB: $((room / 1024)) KiB are left for .gpu/"

# Three solid xz streams, so that what does not fit can be left out without compressing it all
# again: programs (bin/ and tests/: they share their SPIR-V and most of their code), support
# (lib/, oracle/, shared/) and validation (layers/).
pack_part() {  # NAME FOLDER...: $work/NAME.tar.xz of those folders of the stage
    local name=$1
    shift
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner -cf - "$@" |
        xz -T1 --x86 --lzma2=preset=9,dict=128MiB >"$work/$name.tar.xz"
}
packed() { du -cb "$work"/*.tar.xz | tail -1 | cut -f1; }
note "compressing (solid xz streams; several minutes on 2 cores)"
# GPU_PACK_KEEP=DIR: support.tar.xz and validation.tar.xz from an earlier pack in DIR, when the
# loader, the oracle, the models and the layer have not changed (they take most of the time).
for part in support validation; do
    if [[ -n ${GPU_PACK_KEEP:-} && -f $GPU_PACK_KEEP/$part.tar.xz ]]; then
        note "reusing $GPU_PACK_KEEP/$part.tar.xz"
        cp "$GPU_PACK_KEEP/$part.tar.xz" "$work/"
    elif [[ $part = support ]]; then
        pack_part support lib oracle shared debs
    else
        pack_part validation layers
    fi
done
pack_part programs bin tests
dropped=""
if (($(packed) > room)); then
    # First the test programs that are neither kernels nor goldens, then the validation layer.
    note "$(($(packed) / 1024)) KiB do not fit: packing without ${optional_tests[*]}"
    for t in "${optional_tests[@]}"; do rm -f "$stage/tests/$t"; done
    dropped="tests ${optional_tests[*]}"
    pack_part programs bin tests
fi
if (($(packed) > room)); then
    note "still $(($(packed) / 1024)) KiB: packing without the validation layer"
    rm -rf "${stage:?}/layers" "${work:?}/validation.tar.xz"
    dropped="$dropped; the validation layer (the tests run without it)"
fi
(($(packed) <= room)) ||
    die "too large: .gpu/ would take $(($(packed) / 1024)) KiB and the tree $((tree_bytes / 1024)) KiB, over the $limit_mib MiB a call carries"

# MANIFEST: what was packed from where, what was left out, the sums to check, the holes.
rm -rf "${out:?}" && mkdir -p "$out"
{
    echo "commit $(git -C "$root" rev-parse HEAD)"
    echo "describe $(git -C "$root" describe --always --dirty)"
    echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | sed -n 1p)"
    echo "build $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt"))"
    echo "oracle $(tr -d '\n' <"$vkdir/_nlcBuildMetadata.json" 2>/dev/null || echo "$vkdir")"
    [[ -z $dropped ]] || echo "dropped ${dropped#; }"
    for t in F16 Q8_0 Q4_0; do
        echo "derive shared/models/stories260K/stories260K-$t.gguf $(sha256sum "$shared/models/stories260K/stories260K-$t.gguf" | cut -d' ' -f1)"
    done
    while read -r kind f rest; do [[ -e $stage/$f ]] && echo "$kind $f $rest"; done <"$sums"
    cat "$work/holes"
} >"$out/MANIFEST"
mv "$work"/*.tar.xz "$out/"
pack_bytes=$(du -cb "$out"/* | tail -1 | cut -f1)
python3 -c 'import sys
t, p, u, l = map(int, sys.argv[1:])
m = 2**20
print(f"gpu-pack: .gpu/ {p/m:.2f} MiB ({u/m:.0f} MiB unpacked) + tree {t/m:.2f} MiB = {(t+p)/m:.2f} MiB "
      f"of the {(l+262144)/m:.0f} MiB a call carries; {(l-t-p)/m:.2f} MiB to spare", file=sys.stderr)' \
    "$tree_bytes" "$pack_bytes" "$(du -sb "$stage" | cut -f1)" "$limit"
[[ -z $dropped ]] || note "left out to fit: ${dropped#; }"
echo "$out"
