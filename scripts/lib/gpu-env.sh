# shellcheck shell=bash disable=SC2034  # bin, testdir, shared and oracle are for the scripts that source it
# The environment the GPU scripts share (sourced by scripts/gpu-check.sh, gpu-sweep.sh and
# gpu-pack.sh; it runs nothing by itself): where the programs, the test programs, the shared
# models and llama.cpp's oracle are, from a local build or from a pack unpacked on a lent machine,
# and how the Vulkan loader is pointed at the NVIDIA driver there. Each function sets the shell
# variables or exports it names.

# gpu_env_local ROOT BUILD: bin and testdir of the build BUILD; shared ($VKLLM_SHARED_DIR, else
# ROOT/../shared) and oracle ($ORACLE_HOME, else ~/.cache/llama-oracle), as bench-compare.sh has them.
gpu_env_local() {
    bin=$2/bin
    testdir=$2/tests
    shared=${VKLLM_SHARED_DIR:-$1/../shared}
    oracle=${ORACLE_HOME:-$HOME/.cache/llama-oracle}
}

# gpu_env_pack P: the same from a pack (scripts/gpu-pack.sh) unpacked into P, whose libraries
# (the Vulkan loader, glvnd's dispatch library) come first on LD_LIBRARY_PATH.
gpu_env_pack() {
    bin=$1/bin
    testdir=$1/tests
    shared=$1/shared
    oracle=$1/oracle
    export LD_LIBRARY_PATH=$1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# gpu_env_nvidia_libs: the NVIDIA driver's library folders, where its ICD manifest names its
# libraries bare, at the end of LD_LIBRARY_PATH (each present one, once).
gpu_env_nvidia_libs() {
    local d
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
        [[ -d $d && :${LD_LIBRARY_PATH:-}: != *:$d:* ]] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d
    done
    return 0
}

# gpu_env_nvidia_icd CHECK [MANIFEST...]: points the Vulkan loader (VK_DRIVER_FILES and the older
# VK_ICD_FILENAMES) at the NVIDIA ICD manifest, which Debian's loader does not look for where the
# driver's mount keeps it: the first of the usual places, then of the MANIFESTs given, that
# exists and for which the command CHECK succeeds (`true`: the first that exists). Returns 1,
# with neither variable set, when none does.
gpu_env_nvidia_icd() {
    local check=$1 icd
    shift
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/icd.d/nvidia_icd.json \
        /etc/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json "$@"; do
        [[ -f $icd ]] || continue
        export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
        export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json}
        "$check" && return 0
        unset VK_DRIVER_FILES VK_ICD_FILENAMES
    done
    return 1
}
