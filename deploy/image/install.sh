#!/bin/sh
# Turns a Debian bookworm root filesystem into the image's base: the packages of packages.txt, nginx allowed to
# bind ports below 1024 as uid 101, the user 101, and nothing the build left behind. Run as root inside the root
# filesystem: by deploy/Dockerfile (RUN, on debian:bookworm-slim) and by scripts/image/build.sh (chroot, on a
# debootstrap minbase); one script, so the two images do not drift.
set -eu
here=$(dirname "$0")
export DEBIAN_FRONTEND=noninteractive

# Packages do not start services while the image is built (nginx's postinst would).
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
chmod 755 /usr/sbin/policy-rc.d

apt-get update -qq
# shellcheck disable=SC2046 # one package a word
apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends $(grep -v '^#' "$here/packages.txt") >/dev/null
# Bind 80/443 without root: the capability on the binary (honoured when NET_BIND_SERVICE is in the bounding set
# and privileges may be gained; deploy/'s Deployment sets no_new_privs and lowers the pod's
# net.ipv4.ip_unprivileged_port_start instead). setcap is libcap2-bin's, which stays: nginx needs iproute2, which
# needs libcap2-bin (purging it took nginx away with it).
setcap cap_net_bind_service=+ep /usr/sbin/nginx
for module in ndk_http_module ngx_http_lua_module ngx_stream_module ngx_http_brotli_filter_module \
  ngx_http_headers_more_filter_module ngx_http_modsecurity_module; do
  [ -f "/usr/lib/nginx/modules/$module.so" ] || { echo "install.sh: $module.so missing" >&2; exit 1; }
done
# the OWASP Core Rule Set where src/model/optional-modules.ts looks for it
[ -f /etc/modsecurity/crs/crs-setup.conf ] && [ -d /usr/share/modsecurity-crs/rules ] ||
  { echo "install.sh: modsecurity-crs missing" >&2; exit 1; }
[ -n "$(find /usr/lib -path '*lua/5.1/cjson.so' | head -1)" ] || { echo "install.sh: lua-cjson missing" >&2; exit 1; }

# nginx opens its compiled-in error log before it reads -c: send it to stderr, as the nginx image does.
rm -f /etc/nginx/sites-enabled/*
ln -sf /dev/stderr /var/log/nginx/error.log
groupadd --system --gid 101 ingress-actors
useradd --system --uid 101 --gid 101 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin ingress-actors

# What the build leaves behind differs from one build to the next (logs, caches, backups of dpkg's and debconf's
# databases) and serves nothing at run time.
rm -f /usr/sbin/policy-rc.d
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/lib/dpkg/*-old \
  /var/cache/ldconfig/aux-cache /var/log/apt /var/log/dpkg.log /var/log/alternatives.log /var/log/bootstrap.log \
  /etc/machine-id /var/lib/dbus/machine-id
