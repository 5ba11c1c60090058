#!/usr/bin/env bash
# libndm.so (docs/library.md): a SONAME libndm.so.N[.M], and its dynamic
# symbol table holds ndm:: only: no std::/fmt::/spdlog:: instances, nothing of
# a namespace only src/ opens (ndm::transport, ndm::crypto, ...), and no class
# that src/ declares and include/ndm/ never names. Every public header wraps
# its declarations in the default-visibility pragma.
set -euo pipefail
lib="$1"
root="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }

soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[[ "$soname" =~ ^libndm\.so\.[0-9]+(\.[0-9]+)?$ ]] || fail "SONAME is '$soname', not libndm.so.N[.M]"

for h in "$root"/include/ndm/*.hpp; do
  grep -q '^#pragma GCC visibility push(default)' "$h" && grep -q '^#pragma GCC visibility pop' "$h" ||
    fail "$(basename "$h") does not mark its declarations visible (#pragma GCC visibility push/pop)"
done

syms=$(nm -D --defined-only --demangle "$lib" | cut -d' ' -f3-)
# A sanitizer build inlines less: std:: function templates that return an
# ndm type ("ndm::crypto::CipherSuite* std::__copy_move<...>(...)") stay out of
# line, and the map's ndm::* pattern, which sees the return type first, exports
# them. The release library has none (checked below without this filter).
if [ "${NDM_SANITIZED:-0}" = 1 ]; then
  syms=$(grep -vE '^[^(]* std::[_A-Za-z0-9:]+(<.*>)?\(' <<< "$syms" || true)
fi
[ "$(wc -l <<< "$syms")" -gt 100 ] || fail "only $(wc -l <<< "$syms") symbols exported: the public API is missing"
prefix='^((typeinfo|typeinfo name|vtable|VTT|guard variable) for |(non-)?virtual thunk to )?'
others=$(grep -vE "${prefix}ndm::" <<< "$syms" || true)
[ -z "$others" ] || fail "exported outside ndm::: $(head -5 <<< "$others")"

namespaces() { grep -rhoE '^namespace ndm(::[a-z_]+)*' "$@" | cut -d' ' -f2 | sort -u; }
public_ns=$(namespaces "$root/include/ndm")
internal_ns=$(namespaces "$root/src" | grep -vxF "$public_ns" || true)
[ -n "$internal_ns" ] || fail "no src/-only namespace found: the check would match nothing"
for ns in $internal_ns; do
  leaked=$(grep -E "${prefix}${ns}::" <<< "$syms" || true)
  [ -z "$leaked" ] || fail "internal namespace $ns exported: $(head -3 <<< "$leaked")"
done

# Classes of src/ headers in a public namespace (ndm::cc::Cubic) that the
# public headers never name.
checked=0
while IFS= read -r hdr; do
  ns=$(grep -m1 -oE '^namespace ndm(::[a-z_]+)*' "$hdr" | cut -d' ' -f2 || true)
  [ -n "$ns" ] && grep -qxF "$ns" <<< "$public_ns" || continue
  for cls in $(grep -oE '^(class|struct) [A-Z][A-Za-z0-9_]*' "$hdr" | cut -d' ' -f2 || true); do
    grep -rqw "$cls" "$root/include/ndm" && continue
    checked=$((checked + 1))
    leaked=$(grep -E "${prefix}${ns}::${cls}(::|\\(| |$)" <<< "$syms" || true)
    [ -z "$leaked" ] || fail "internal class $ns::$cls exported: $(head -3 <<< "$leaked")"
  done
done < <(find "$root/src" -name '*.hpp')
[ "$checked" -gt 10 ] || fail "only $checked internal classes checked"
echo "PASS: $soname exports $(wc -l <<< "$syms") ndm:: symbols; $checked internal classes and $(wc -w <<< "$internal_ns") internal namespaces hidden"
