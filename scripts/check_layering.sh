#!/usr/bin/env bash
# The layering of the tree (docs/architecture.md), checked on its #include
# lines with plain `git grep`: include/ndm → crypto/tls → wire → transport/cc →
# sim/emu/io/qlog → tools, never the other way. The build enforces the part
# that is about src/ folders: each is an object library compiled against only
# the folders its layer may include (cmake/ndm_layers.cmake), so a forbidden
# "folder/file.hpp" does not compile. This check keeps what a compiler cannot
# see: the public headers a layer includes, a "../" path, src/ against tools/,
# tools/ and python/ against src/, include/ndm, and the comments.
#   1. The transport core (src/transport, src/wire, src/cc) includes nothing
#      from the layers above it: io, emu, sim, qlog, the workload, the tools,
#      nor their public headers (ndm/endpoint.hpp, emu, sim, link, qlog, workload).
#   2. src/ never includes tools/.
#   3. tools/ (and python/, the bindings) include no private header outside tools/: nothing from a
#      directory of src/ (transport/, cc/, io/, ...). Where a tool needs more
#      than include/ndm offers, the library lacks an API. The tools include
#      their own headers by their path from the root ("tools/emu/relay.hpp"),
#      so tools/emu is not mistaken for src/emu.
#   3b. tools/cli, what every tool's command line is made of, includes no other
#      folder of tools/ (perf, emu, compare, ...): they build on it.
#   4. include/ndm/ includes only include/ndm/ and system or third-party
#      headers.
#   5. The cryptography (src/crypto, src/tls) sits below the core: it
#      includes nothing of ndm but itself, src/util and include/ndm/time.hpp.
#   5b. The wire codec (src/wire) sits between the cryptography and the core:
#      it includes only itself, src/crypto, src/util and the public headers of
#      the basic types (ndm/connection.hpp and what it includes: time, ecn,
#      stats, tls, observer, loss_detection), never src/transport or above.
#   6. Comments and docs cite only what a clone of the repository holds (its
#      docs, RFCs, papers, commits): no notes kept outside it, and no "issue N"
#      or "session N" (any case, "#N" too), which point at a tracker and a
#      history a clone does not have: say the rule, RFC clause, doc section or
#      commit instead. An upstream tracker named as such passes: the number
#      follows a project name of the list `upstream` below ("picoquic issue
#      1110", "ngtcp2's issue 123"); a line that also holds one of ours is
#      still printed.
#   7. docs/architecture.md names every folder of src/ (as src/NAME), so its
#      layer diagram and map of the tree cannot silently fall behind the tree.
# Prints each violating line (file:line: text) under its rule; exits 1 if
# there is any, 0 if none. Usage: check_layering.sh [repository] (default:
# the one this script is in). Tracked and untracked (not ignored) files count.
set -euo pipefail
repo=${1:-"$(dirname "$0")/.."}
cd "$repo"

# The private directories are those of src/, so a new one is covered at once.
src_dirs=$(git ls-files --cached --others --exclude-standard -- src | awk -F/ 'NF > 2 { print $2 }' | sort -u | paste -sd'|')
[[ -n $src_dirs ]] || { echo "check_layering: no src/ directories in $(pwd)" >&2; exit 2; }
inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*["<](\.\./)*'

failed=0
rule() {  # rule <description> <extended regex> <pathspec...>
    local what=$1 re=$2
    shift 2
    local hits
    hits=$(git grep --untracked -n -E "$re" -- "$@" || true)
    if [[ -n $hits ]]; then
        echo "layering violation: $what"
        printf '%s\n' "$hits" | sed 's/^/  /'
        failed=1
    fi
}

rule "the transport core (src/transport, src/wire, src/cc) includes a higher layer" \
    "${inc}((io|emu|sim|qlog|workload|tools|train)/|ndm/(endpoint|emu|sim|link|qlog|workload)\.hpp)" \
    src/transport src/wire src/cc
rule "src/ includes tools/" "${inc}(tools|)/" src
rule "tools/ or python/ includes a private header of src/" "${inc}(${src_dirs})/" tools python
tool_dirs=$(git ls-files --cached --others --exclude-standard -- tools | awk -F/ 'NF > 2 && $2 != "cli" { print $2 }' | sort -u | paste -sd'|')
[[ -z $tool_dirs ]] || rule "tools/cli includes another folder of tools/" "${inc}tools/(${tool_dirs})/" tools/cli
rule "include/ndm/ includes a private header" "${inc}(${src_dirs}|tools|train)/" include
rule "src/crypto or src/tls includes a layer above it" \
    "${inc}((transport|wire|cc|io|emu|sim|qlog|workload|tools|train)/|ndm/(connection|observer|cc|emu|sim|endpoint|link|qlog|stats|train|ndm_model|udp_socket|workload|version)\.hpp)" \
    src/crypto src/tls
# 5b: every src/ folder but wire, crypto and util, and every public header but
# the basic types', listed from the tree so that a new one is forbidden at once.
wire_src=$(tr '|' '\n' <<<"$src_dirs" | { grep -vxE 'wire|crypto|util' || true; } | paste -sd'|')
wire_pub=$(git ls-files --cached --others --exclude-standard -- include/ndm | sed -n 's|^include/ndm/\([^/]*\)\.hpp$|\1|p' |
    { grep -vxE 'connection|observer|time|ecn|stats|tls|loss_detection' || true; } | paste -sd'|')
rule "src/wire includes the core or a layer above it" \
    "${inc}((${wire_src:-transport}|tools)/|ndm/(${wire_pub:-endpoint})\.hpp)" src/wire
rule "a comment or doc cites notes outside the repository" \
    'shared/docs|transport-notes|quic-tls-bbr|emulator-notes|ndm-spec\.md|ARCHITECTURE\.md|seed-experiment' \
    src include tools tests bench scripts docs README.md CMakeLists.txt data ':!scripts/check_layering.sh' \
    ':!tests/cli/check_layering_test.sh'

# Rule 6, references to this project's tracker or work sessions. git grep has
# no look-behind, so sed drops the upstream references from each hit (keeping
# the hit in its hold space) and prints it only if one of ours is left.
upstream='picoquic|quinn|quinn-proto|ngtcp2|nghttp3|msquic|quiche|mvfst|lsquic|neqo|s2n-quic|aioquic'
upstream+='|linux|gnutls|nettle|openssl|liburing|iperf3|mahimahi|pytorch|pybind11|numpy|cpython|spdlog'
upstream+='|doctest|cli11|asio|cmake|glibc|gcc|llvm|debian'
ref='\b(issue|session)[[:space:]]+#?[0-9]+\b'
refs=$(git grep --untracked -n -i -E "$ref" -- src include tools tests bench scripts docs python README.md \
           CMakeLists.txt data ':!scripts/check_layering.sh' ':!tests/cli/check_layering_test.sh' |
       sed -E -e h -e "s/\\b($upstream)('s)?[[:space:]]+(issue|session)[[:space:]]+#?[0-9]+\\b//Ig" \
           -e "/$ref/I!d" -e g || true)
if [[ -n $refs ]]; then
    echo "layering violation: a comment or doc cites this project's tracker or a work session (issue N, session N)"
    printf '%s\n' "$refs" | sed 's/^/  /'
    failed=1
fi

# Rule 7: every src/ folder named in docs/architecture.md.
undocumented=$(for d in ${src_dirs//|/ }; do
    grep -qE "src/$d([^A-Za-z0-9_]|\$)" docs/architecture.md 2> /dev/null || echo "src/$d"
done)
if [[ -n $undocumented ]]; then
    echo "layering violation: docs/architecture.md does not name these src/ folders"
    printf '%s\n' "$undocumented" | sed 's/^/  /'
    failed=1
fi

if ((failed)); then
    echo "check_layering: the layering rules above are broken (scripts/check_layering.sh)" >&2
    exit 1
fi
echo "check_layering: include/ndm, src/transport+wire+cc, src/crypto+tls, src/ and tools/ keep their layers"
