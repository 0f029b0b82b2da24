#!/bin/bash
# The whole test suite, as CI runs it: installs what is missing (Debian
# packages, the speedscope checker, the version chroots), builds, runs the
# cmocka unit tests, then the pytest integration tests against real Python
# processes with the real BPF programs, and the VM tests (vmtests/).
# Under CI=true the Makefile builds with -Werror. Exits non-zero if anything
# failed; pytest's closing line comes last.
set -u
cd "$(dirname "$0")/.."
status=0

scripts/deps.sh || exit 1
scripts/deps-speedscope.sh || exit 1
# the 3.9, 3.13 and 3.14 interpreters (cached after the first run)
scripts/make-chroots.sh || echo "test.sh: some chroots could not be built; their tests will say so"
# QEMU and Debian's 6.1 and 6.12 kernels for the VM tests (cached)
vmtests/setup.sh || echo "test.sh: the VM test kernels could not be fetched; their tests will say so"

make -j"$(nproc)" ebpfprof unit-bins embed-host || exit 1
# user/ is layered: no folder includes a header of one above it
scripts/check-layers.sh || status=1
make unit || status=1
# the same unit tests under AddressSanitizer and UBSan
make -j"$(nproc)" check-asan || status=1
# the fuzz targets, briefly (make fuzz runs them for ten minutes each)
make -j"$(nproc)" fuzz-short || status=1
make integration || status=1
exit $status
