#!/usr/bin/env bash
# Installs the Debian packages ndm builds with and its tests and tools use, only
# those that are missing. Everything comes from Debian's archive; nothing is
# downloaded from elsewhere. The tests' other commands (bash, coreutils' timeout
# and mktemp, grep, sed, mawk, diffutils) are in every Debian installation,
# minbase included. bench/*.sh install their own extras (iperf3, jq) when run.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build pkg-config   # toolchain
  clang libclang-rt-14-dev           # libFuzzer target (clang -fsanitize=fuzzer)
  libasio-dev                        # fallback event loop, timers, signals
  liburing-dev                       # io_uring data path
  libspdlog-dev libfmt-dev           # logging
  libgnutls28-dev nettle-dev         # TLS 1.3 and QUIC packet protection (RFC 9001)
  doctest-dev                        # unit and integration tests
  libcli11-dev                       # command lines of the tools
  nlohmann-json3-dev                 # JSON output, profiles, model files
  libxxhash-dev                      # XXH3, the hash of the tools' byte-exactness check
  libbenchmark-dev                   # micro-benchmarks in bench/
  libxml2-utils                      # xmllint: the tool tests check that SVG reports are well-formed
  iproute2                           # ip (ndm-emu shell, namespace tests), tc (tbf test), ss (free ports)
  python3                            # bench/*.sh summarise their runs with it
  python3-dev pybind11-dev python3-numpy  # the Python bindings (python/, docs/python.md)
  openssl                            # the TLS tool test makes a certificate ndm did not make
  tshark                             # Wireshark's QUIC dissector checks a captured session
  ngtcp2-client ngtcp2-server        # gtlsclient, gtlsserver: the handshake interop test (another QUIC stack)
  python3-torch python3-numpy        # python/ndm_train_torch: the loss classifier trained in PyTorch (~250 MB with libtorch)
  python3-distributed                # ndm.sweep / ndm-sweep --scheduler: sweeps on a Dask cluster (docs/python.md)
  python3-matplotlib                 # ndm.plots / ndm-plot: the evaluation figures (docs/python.md)
  help2man                           # the tools' man pages, from their --help (tools/CMakeLists.txt)
  man-db dpkg-dev file               # CI's Debian package step: man -w, cpack -G DEB's dpkg-shlibdeps and file
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ndm setup: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null || { echo "ndm setup: missing ${missing[*]}: run as root, or install sudo" >&2; exit 1; }
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
