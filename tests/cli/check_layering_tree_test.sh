#!/usr/bin/env bash
# scripts/check_layering.sh on this source tree. The check reads git's file
# list (git grep), so without git or outside a git checkout (a source tarball)
# it cannot run: reported as skipped (exit 77, skip_lib.sh), never as passed.
# Usage: check_layering_tree_test.sh SOURCE_DIR
set -euo pipefail
src=$1
# shellcheck source=skip_lib.sh
source "$(dirname "$0")/skip_lib.sh"
git --version > /dev/null 2>&1 || skip_lacking "no git (the check reads git's file list; scripts/setup.sh installs git)"
# The top of a checkout, as cmake/git_commit.cmake asks (a tarball unpacked
# inside another repository is no checkout of ndm).
top=$(git -C "$src" rev-parse --show-toplevel 2> /dev/null) && [ "$(realpath "$top")" = "$(realpath "$src")" ] ||
  skip_lacking "$src is not the top of a git checkout (a source tarball): the check reads git's file list"
exec bash "$src/scripts/check_layering.sh" "$src"
