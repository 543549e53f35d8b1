#!/usr/bin/env bash
# `npm run image`: the controller's OCI image from Debian packages only, with no base image pulled and no
# container engine: debootstrap makes a bookworm minbase root filesystem, deploy/image/install.sh (the script
# deploy/Dockerfile runs too) installs deploy/image/packages.txt into it, and umoci writes two layers (Debian; then
# Node 24, the built project and its production node_modules in /app) and the image config deploy/Dockerfile
# describes. Out, in dist/image/:
#   ingress-actors-<version>.oci.tar    an OCI image layout archive (skopeo copy oci-archive:…, podman load -i …)
#   ingress-actors-<version>.spdx.json  its SBOM (SPDX 2.3: the Debian packages with versions, the npm packages)
# Needs root (chroot, file ownership, setcap) and debootstrap, umoci; .ci/run-image installs them when missing.
# The Debian layer is kept in ~/.cache/ingress-actors-image/ (IMAGE_CACHE; keyed by packages.txt and install.sh):
# reruns only remake /app.
# Reproducible: files get the mtime SOURCE_DATE_EPOCH (default: the last commit's time); the same inputs give the
# same layer digests (IMAGE_FRESH_BASE=1 debootstraps again instead of reusing the cached Debian layer).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

mirror=${IMAGE_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
# The cache is outside the repository: its root filesystem (broken /dev symlinks, node_modules) is no linter's.
cache=${IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ingress-actors-image}
out=${IMAGE_OUT:-$root/dist/image}
node_bin=$root/node_modules/node/bin/node
version=$("$node_bin" -p 'require("./package.json").version')
name=ingress-actors
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
export SOURCE_DATE_EPOCH
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

[ "$(id -u)" = 0 ] || { echo "image: run as root (chroot, setcap, files owned by root)" >&2; exit 1; }
for tool in debootstrap umoci; do
  command -v "$tool" >/dev/null || { echo "image: $tool missing (apt-get install debootstrap umoci)" >&2; exit 1; }
done
mkdir -p "$cache" "$out"
started=$(date +%s)
say() { echo "image: $* ($(($(date +%s) - started)) s)"; }

# --- The Debian layer: debootstrap + install.sh, kept while packages.txt and install.sh stay the same.
key=$(cat deploy/image/packages.txt deploy/image/install.sh <(echo "$suite $mirror") | sha256sum | cut -c1-16)
base=$cache/base-$key
if [ -n "${IMAGE_FRESH_BASE:-}" ] || [ ! -f "$base/done" ]; then
  rm -rf "$base"
  mkdir -p "$base"
  say "debootstrap $suite (minbase) from $mirror"
  debootstrap --variant=minbase "$suite" "$base/rootfs" "$mirror" >"$base/debootstrap.log" 2>&1 ||
    { tail -20 "$base/debootstrap.log" >&2; exit 1; }
  say "installing deploy/image/packages.txt"
  mkdir -p "$base/rootfs/tmp/image"
  cp deploy/image/packages.txt deploy/image/install.sh "$base/rootfs/tmp/image/"
  mount -t proc proc "$base/rootfs/proc"
  trap 'umount "$base/rootfs/proc" 2>/dev/null || true' EXIT
  chroot "$base/rootfs" /bin/sh /tmp/image/install.sh
  umount "$base/rootfs/proc"
  trap - EXIT
  rm -rf "$base/rootfs/tmp/image" "$base/rootfs/var/cache/apt/archives"/*.deb
  # debootstrap copied the build machine's name and resolver; the runtime provides a container's own.
  : >"$base/rootfs/etc/hostname"
  : >"$base/rootfs/etc/resolv.conf"
  touch "$base/done"
  # Debian layers of other package lists are not used again.
  find "$cache" -mindepth 1 -maxdepth 1 -name 'base-*' ! -name "base-$key" -exec rm -rf {} +
fi

# --- The /app layer: Node 24 (the `node` package's binary, as bin/ingress-actors finds it in development), the
# project as deploy/Dockerfile builds it, and only the production dependencies.
stage=$cache/app
rm -rf "$stage"
mkdir -p "$stage/app" "$stage/usr/local/bin"
say "building dist/src, dist/machines (deploy/image/tsconfig.json)"
"$node_bin" node_modules/typescript/bin/tsc -p deploy/image/tsconfig.json --outDir "$stage/app/dist"
grep -v '^#' deploy/image/files.txt | while read -r path; do cp -a "$path" "$stage/app/"; done
cp package-lock.json "$stage/app/"
say "npm ci --omit=dev --omit=optional (as deploy/Dockerfile)"
(cd "$stage/app" && npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
rm "$stage/app/package-lock.json"
cp "$node_bin" "$stage/usr/local/bin/node"
chown -R 0:0 "$stage"
chmod -R go-w "$stage"

# --- Layers and config. Every mtime is SOURCE_DATE_EPOCH; umoci stores no atime/ctime.
say "layers (umoci)"
for dir in "$base/rootfs" "$stage"; do
  find "$dir" -depth -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
done
oci=$cache/oci
rm -rf "$oci"
umoci init --layout "$oci"
umoci new --image "$oci:$version"
history=(--history.created="$created" --history.author=ingress-actors)
umoci insert --image "$oci:$version" "${history[@]}" --history.created_by="debootstrap $suite minbase; deploy/image/install.sh" \
  "$base/rootfs" /
umoci insert --image "$oci:$version" "${history[@]}" --history.created_by="Node 24; dist, $(grep -v '^#' deploy/image/files.txt | tr '\n' ' ')node_modules (--omit=dev)" \
  "$stage" /
# As deploy/Dockerfile: uid 101, tini as PID 1 (it reaps the workers of a killed nginx master), `controller`.
umoci config --image "$oci:$version" --no-history --created="$created" --author=ingress-actors \
  --os=linux --architecture=amd64 \
  --config.user=101:101 --config.workingdir=/app \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env=NODE_ENV=production --config.env=NGINX_BINARY=/usr/sbin/nginx \
  --config.entrypoint=/usr/bin/tini --config.entrypoint=-- --config.entrypoint=node \
  --config.entrypoint=/app/dist/src/cli/main.js --config.cmd=controller \
  --config.exposedports=80/tcp --config.exposedports=443/tcp --config.exposedports=10254/tcp \
  --config.label=org.opencontainers.image.title=ingress-actors \
  --config.label=org.opencontainers.image.version="$version" \
  --config.label=org.opencontainers.image.licenses=Apache-2.0 \
  --config.label=org.opencontainers.image.created="$created"
umoci gc --layout "$oci"

archive=$out/$name-$version.oci.tar
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner -C "$oci" -cf "$archive" .
say "SBOM"
"$node_bin" scripts/image/sbom.ts --rootfs "$base/rootfs" --app "$stage/app" --node "$stage/usr/local/bin/node" \
  --name "$name" --version "$version" --created "$created" >"$out/$name-$version.spdx.json"

layers=$("$node_bin" scripts/image/figures.ts "$oci" "$version")
say "done: $archive"
echo "$layers"
