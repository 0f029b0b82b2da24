#!/bin/sh
# Makes the local podman image debian:bookworm-slim from a debootstrapped
# bookworm root when no registry is reachable. The root is built once and
# cached as a tarball in /var/cache/ebpfprof; the import is skipped when the
# image already exists. Needs root, debootstrap and podman.
set -eu
cache=${EBPFPROF_CACHE:-/var/cache/ebpfprof}
tarball=$cache/bookworm-minbase.tar
image=${BASE_IMAGE:-debian:bookworm-slim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if podman image exists "$image"; then
	echo "container-base: $image present"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.bookworm-minbase.lock"
flock 9
if [ ! -s "$tarball" ]; then
	root=$(mktemp -d "$cache/bookworm-root.XXXXXX")
	trap 'rm -rf "$root"' EXIT
	echo "container-base: debootstrap --variant=minbase bookworm (a few minutes, once)"
	debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/bookworm-debootstrap.log" 2>&1 || {
		tail -20 "$cache/bookworm-debootstrap.log" >&2
		exit 1
	}
	# what the official slim image does: no apt caches, no docs
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*
	tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
fi
podman import --change 'CMD ["/bin/bash"]' "$tarball" "$image" >/dev/null
echo "container-base: imported $tarball as $image"
