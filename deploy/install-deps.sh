#!/usr/bin/env bash
# Install what building, testing and running bertserve need on Debian 12.
# Usage: bash deploy/install-deps.sh            (build + run + tests)
#        BERT_DEPS=runtime bash deploy/install-deps.sh   (run only)
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
runtime="libjansson4 libuv1 libopenblas0-pthread libutf8proc2 libdnnl2 libgomp1 curl"
build="build-essential cmake pkg-config libjansson-dev libuv1-dev \
  libopenblas-dev libutf8proc-dev libdnnl-dev"
tests="python3 clang libclang-rt-14-dev valgrind nginx curl python3-yaml strace systemd"
case "${BERT_DEPS:-all}" in
  runtime) pkgs="$runtime" ;;
  build) pkgs="$runtime $build" ;;
  *) pkgs="$runtime $build $tests" ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
