#!/usr/bin/env bash
# Bash completion generated from the tools' option lists (tools/cli/completion.hpp):
# `ndm-send --lo` offers --logfile, every long option of --help is offered, a
# file name follows an option that takes a value, and a subcommand's options
# follow it (ndm-emu relay). Needs bash only, not the bash-completion package.
set -euo pipefail
dir="$1"  # the generated completions/
fail() { echo "FAIL: $*" >&2; exit 1; }
# complete FUNC WORD...: COMPREPLY for the last word, one per line.
complete_words() {
  local fn=$1; shift
  COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
  "$fn"
  printf '%s\n' "${COMPREPLY[@]}"
}
for f in "$dir"/ndm-*; do
  # shellcheck disable=SC1090
  source "$f"
done
complete -p ndm-send > /dev/null || fail "no completion registered for ndm-send"
# Matches read from here-strings: `producer | grep -q` under pipefail fails at
# random when grep exits before the producer has written everything (SIGPIPE).
grep -qx -- --logfile <<< "$(complete_words _ndm_send ndm-send --lo)" || fail "ndm-send --lo does not offer --logfile"
[ "$(complete_words _ndm_send ndm-send --logf)" = "--logfile" ] || fail "ndm-send --logf offers more than --logfile"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
touch "$tmp/out.log"
grep -qx "$tmp/out.log" <<< "$(complete_words _ndm_send ndm-send --logfile "$tmp/ou")" || fail "no file name after --logfile"
relay=$(complete_words _ndm_emu ndm-emu relay --)
shell=$(complete_words _ndm_emu ndm-emu shell --)
[ -n "$relay" ] && [ "$relay" != "$shell" ] || fail "ndm-emu relay and shell offer the same options"
grep -qx relay <<< "$(complete_words _ndm_emu ndm-emu "")" || fail "ndm-emu does not offer its subcommand relay"
n=0
for tool in "${@:2}"; do
  name=$(basename "$tool"); fn="_${name//-/_}"
  offered=$(complete_words "$fn" "$name" --)
  # The option column of --help: "  -p,--port UINT  ..." (not options named in descriptions).
  for opt in $("$tool" --help | grep -oE '^ +-[^ ]+' | tr ',' '\n' | grep -oE -- '^ *--[a-z][a-z0-9-]*' | sort -u); do
    grep -qx -- "$opt" <<< "$offered" || fail "$name: --help lists $opt, completion does not offer it"
    n=$((n + 1))
  done
done
echo "PASS: completion offers --logfile, file names, subcommand options and all $n long options of --help"
