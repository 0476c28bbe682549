# Sourced by the scripts beside it on the GPU machine: from the
# repository root, the Vulkan loader's packages carried in .gl/ unpacked
# (docs/ENVIRONMENT), and the number of GPUs in $gpus.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[1]}")/../.."
for f in .gl/*.deb; do dpkg -x "$f" / ; done
ldconfig
gpus=$(nvidia-smi -L | wc -l)
