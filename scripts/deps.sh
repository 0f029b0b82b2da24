#!/bin/sh
# Installs every Debian package ebpfprof's build and tests need. Idempotent:
# installs only what is missing. Needs root (apt-get).
set -eu
build="clang llvm libclang-rt-14-dev libbpf-dev bpftool libelf-dev libdw-dev liblzma-dev zlib1g-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev make gcc pkg-config"
tests="libcmocka-dev time python3 python3-pytest python3-jsonschema debootstrap python3.11-dbg
python3.11-dev libpython3.11-dev util-linux bsdutils procps chromium golang-go tmux
mandoc man-db groff-base libcap2-bin podman runc catatonit python3-distributed
python3-setuptools python3-pip python3-venv python3-yaml strace xz-utils binutils"
missing=""
for p in $build $tests; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# Node.js may come from elsewhere with its own npm (which conflicts with
# Debian's npm package): what matters is that both commands exist.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	missing="$missing nodejs npm"
fi
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
echo "deps: Debian packages present"
