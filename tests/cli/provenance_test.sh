#!/usr/bin/env bash
# Provenance (include/ndm/version.hpp): cmake/git_commit.cmake bakes in the
# checkout's commit, "-dirty" when tracked files changed, and "unknown" for a
# source tree without .git (a tarball), also one unpacked inside another
# repository; ndm-sim --json records version, commit, command line, start
# time, host and kernel, the commit being the source tree's HEAD.
set -euo pipefail
cmake="$1"
src="$2"
sim="$3"
check="$4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
commit_of() { sed -n 's/^#define NDM_BUILD_GIT_COMMIT "\(.*\)"$/\1/p' "$1"; }
gen() { "$cmake" -DSOURCE_DIR="$1" -DVERSION=9.9.9 -DOUTPUT="$2" -P "$src/cmake/git_commit.cmake"; }

# A tarball: no .git at all, and one unpacked inside an unrelated repository.
mkdir -p "$tmp/tarball" "$tmp/outer/ndm-0.1.0"
gen "$tmp/tarball" "$tmp/a.hpp"
[ "$(commit_of "$tmp/a.hpp")" = unknown ] || fail "no .git: $(cat "$tmp/a.hpp")"
grep -q '^#define NDM_BUILD_VERSION "9.9.9"$' "$tmp/a.hpp" || fail "version not written"
if command -v git > /dev/null; then
  git -C "$tmp/outer" init -q
  gen "$tmp/outer/ndm-0.1.0" "$tmp/b.hpp"
  [ "$(commit_of "$tmp/b.hpp")" = unknown ] || fail "inside another repository: $(cat "$tmp/b.hpp")"
  # A checkout: its HEAD, then -dirty once a tracked file changes.
  mkdir "$tmp/repo"
  git -C "$tmp/repo" init -q
  echo one > "$tmp/repo/f"
  git -C "$tmp/repo" add f
  git -C "$tmp/repo" -c user.name=t -c user.email=t@t commit -qm one
  gen "$tmp/repo" "$tmp/c.hpp"
  [ "$(commit_of "$tmp/c.hpp")" = "$(git -C "$tmp/repo" rev-parse HEAD)" ] || fail "clean checkout: $(cat "$tmp/c.hpp")"
  before=$(stat -c %y "$tmp/c.hpp")
  sleep 1
  gen "$tmp/repo" "$tmp/c.hpp"
  [ "$(stat -c %y "$tmp/c.hpp")" = "$before" ] || fail "rewritten though unchanged"
  echo two > "$tmp/repo/f"
  gen "$tmp/repo" "$tmp/c.hpp"
  [ "$(commit_of "$tmp/c.hpp")" = "$(git -C "$tmp/repo" rev-parse HEAD)-dirty" ] || fail "dirty checkout: $(cat "$tmp/c.hpp")"
fi

# ndm-sim --json: the record, with the commit the binary was built from.
"$sim" -n 1M --json > "$tmp/sim.json"
got=$("$check" get "$tmp/sim.json" provenance.git_commit)
if command -v git > /dev/null && [ -e "$src/.git" ]; then
  case "$got" in "$(git -C "$src" rev-parse HEAD)"|"$(git -C "$src" rev-parse HEAD)-dirty") ;; *) fail "ndm-sim says it was built from $got, the source tree is at $(git -C "$src" rev-parse HEAD): rebuild";; esac
else
  [ "$got" = unknown ] || fail "ndm-sim commit $got outside a checkout"
fi
"$check" get "$tmp/sim.json" provenance.ndm_version | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$' || fail "ndm_version"
[ "$("$check" get "$tmp/sim.json" provenance.command_line)" = "$sim -n 1M --json" ] || fail "command_line"
[ "$("$check" get "$tmp/sim.json" provenance.host)" = "$(uname -n)" ] || fail "host"
[ "$("$check" get "$tmp/sim.json" provenance.kernel)" = "$(uname -srvm)" ] || fail "kernel"
"$check" get "$tmp/sim.json" provenance.start_time | grep -Eq "^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$" \
  || fail "start_time"
echo "provenance: all checks passed"
