#!/usr/bin/env bash
# Installs the Debian packages ndm builds with and its tests and tools use, only
# those that are missing. Everything comes from Debian's archive; nothing is
# downloaded from elsewhere.
#   scripts/setup.sh           everything: the build, the test suite, the fuzzers, CI's package step
#   scripts/setup.sh --main    only what configuring the tree and building and running the
#                              main job takes (scripts/run.sh: about a third of the download)
# The tests' other commands (bash, coreutils' timeout and mktemp, grep, sed,
# mawk, diffutils, findutils, util-linux's flock) are in every Debian
# installation, debootstrap's minbase included; what minbase lacks is listed
# below (git, procps, iproute2, ...). bench/*.sh install their own extras
# (iperf3, jq) when run.
# While apt-get works it prints what it installs, how much it downloads and
# takes on disk, and a progress line per tenth of the packages: a fresh Debian
# 12 takes minutes here (README.md, "The first run").
set -euo pipefail

MAIN_PACKAGES=(
  g++ cmake ninja-build pkg-config   # toolchain
  libasio-dev                        # fallback event loop, timers, signals
  liburing-dev                       # io_uring data path
  libspdlog-dev libfmt-dev           # logging
  libgnutls28-dev nettle-dev         # TLS 1.3 and QUIC packet protection (RFC 9001)
  libnghttp3-dev                     # HTTP/3 framing and QPACK (src/h3, ndm-h3)
  libssl-dev                         # packet protection through OpenSSL 3 libcrypto (faster ChaCha20-Poly1305)
  doctest-dev                        # unit and integration tests (configuring the tree needs it)
  libcli11-dev                       # command lines of the tools
  nlohmann-json3-dev                 # JSON output, profiles, model files
  libxxhash-dev                      # XXH3, the hash of the tools' byte-exactness check
  libbenchmark-dev                   # micro-benchmarks in bench/
  python3                            # bench/*.sh summarise their runs with it
  python3-dev pybind11-dev python3-numpy  # the Python bindings (python/, docs/python.md)
  help2man                           # the tools' man pages, from their --help (tools/CMakeLists.txt)
)
TEST_PACKAGES=(
  git                                # the layering tests (git grep), the commit baked into the build
  procps                             # pgrep: the ndm-emu shell kill test
  clang libclang-rt-14-dev           # libFuzzer target (clang -fsanitize=fuzzer)
  libxml2-utils                      # xmllint: the tool tests check that SVG reports are well-formed
  iproute2                           # ip (ndm-emu shell, namespace tests), tc (tbf test), ss (free ports)
  openssl                            # the TLS tool test makes a certificate ndm did not make
  tshark                             # Wireshark's QUIC dissector checks a captured session
  ngtcp2-client ngtcp2-server        # gtlsclient, gtlsserver: the handshake interop test (another QUIC stack)
  python3-torch                      # python/ndm_train_torch: the loss classifier trained in PyTorch (~250 MB with libtorch)
  python3-distributed                # ndm.sweep / ndm-sweep --scheduler: sweeps on a Dask cluster (docs/python.md)
  python3-matplotlib                 # ndm.plots / ndm-plot: the evaluation figures (docs/python.md)
  python3-pytest                     # the Python tests (python/tests, docs/python.md)
  python3-venv python3-pip python3-setuptools python3-wheel  # pip install ./python into a venv: its CTest case
  man-db dpkg-dev file               # CI's Debian package step: man -w, cpack -G DEB's dpkg-shlibdeps and file
)

PACKAGES=("${MAIN_PACKAGES[@]}")
case "${1:-}" in
  "") PACKAGES+=("${TEST_PACKAGES[@]}") ;;
  --main) ;;
  *) echo "setup.sh: unknown option '$1' (scripts/setup.sh [--main])" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo > /dev/null || { echo "ndm setup: missing ${missing[*]}: run as root, or install sudo" >&2; exit 1; }
  SUDO="sudo"
fi
# apt-get with sudo when not root; env passes the variables through sudo's reset.
apt_get() { $SUDO env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get "$@"; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "ndm setup: ${#missing[@]} Debian packages missing: ${missing[*]}" >&2
echo "ndm setup: apt-get update (reading Debian's package lists)" >&2
apt_get update -qq

# What apt-get would do: the packages with their dependencies, the download and
# the disk space (apt's own summary lines; --assume-no answers its question).
apt_get install --assume-no --no-install-recommends "${missing[@]}" > "$log" 2>&1 || true
need=$(sed -n 's/^Need to get \([^ ]* [^ ]*\).*/\1/p' "$log")
disk=$(sed -n 's/^After this operation, \([^ ]* [^ ]*\).*/\1/p' "$log")
# "U upgraded, N newly installed, ...": the packages apt-get fetches and sets up.
total=$(awk '/ upgraded, .* newly installed/ { print $1 + $3 }' "$log")
total=${total:-0}
echo "ndm setup: installing $total packages with their dependencies: ${need:-?} to download, ${disk:-?} on disk" >&2

# The install, its output parsed for progress: downloads (Get:N) and
# set-ups, a line per tenth; on failure apt's last lines.
step=$(((total + 9) / 10))
((step > 0)) || step=1
if ! apt_get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}" 2>&1 |
     tee "$log" |
     awk -v total="$total" -v step="$step" '
       /^Get:[0-9]+ / { got++; if (got <= total && (got % step == 0 || got == total)) { printf "ndm setup: downloaded %d of %d packages\n", got, total; fflush() } }
       /^Setting up / { done++; if (done <= total && (done % step == 0 || done == total)) { printf "ndm setup: set up %d of %d packages\n", done, total; fflush() } }
     ' >&2; then
  echo "ndm setup: apt-get install failed; its last lines:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
echo "ndm setup: installed ${missing[*]}" >&2
