# Shared by the ndm-send/ndm-recv loopback tests; sourced after "$recv" (and, for get, "$check") is set.
# Provides $out (a temporary directory, removed on exit, whose *.txt/*.json
# files `fail` prints), fail MSG, free_port, start_server [FLAGS...] (an
# `ndm-recv -1` on 127.0.0.1:$port, ready when it returns) and finish_server
# (waits for that server and checks its exit status). CTest's TIMEOUT bounds
# every wait.
out=$(mktemp -d)
srv_pid=""
cleanup() {
  [ -n "$srv_pid" ] && kill -9 "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
  rm -rf "$out"
}
trap cleanup EXIT
# get FILE KEY: a value of $out/FILE's JSON, read with ndm_json_check ($check).
get() { "$check" get "$out/$1" "$2" || fail "no $2 in $1"; }
# check_shape <file in $out> <what>: the -J document has docs/ndm-send-json.md's shape ($doc).
check_shape() {
    "$check" shape "$doc" "$out/$1" > /dev/null 2> "$out/shape.txt" || fail "$2 -J shape: $(cat "$out/shape.txt")"
}
fail() {
  echo "FAIL: $*"
  for f in "$out"/*.txt "$out"/*.json; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done
  exit 1
}

# A UDP port nobody listens on: random in a range few services use, skipping
# ports in use when `ss` can tell (no Python: its start-up is slow on a loaded machine).
free_port() {
  local p
  for _ in $(seq 20); do
    p=$((20000 + RANDOM % 20000))
    command -v ss > /dev/null && ss -Hlun "sport = :$p" 2>/dev/null | grep -q . && continue
    echo "$p"; return
  done
  echo "$p"
}

start_server() {
  port=$(free_port)
  # The previous server's "listening" must not pass for this one's: the
  # child truncates the file only once it runs.
  rm -f "$out/recv.txt"
  "$recv" -1 -B 127.0.0.1 -p "$port" "$@" > "$out/recv.txt" 2> "$out/recv_err.txt" &
  srv_pid=$!
  local a
  for a in "$@"; do [ "$a" = -J ] && { sleep 0.5; return 0; }; done  # -J prints nothing until the end
  for _ in $(seq 50); do grep -q "listening" "$out/recv.txt" 2>/dev/null && return 0; sleep 0.1; done
  fail "ndm-recv did not start"
}

finish_server() { wait "$srv_pid" || fail "ndm-recv exit code"; srv_pid=""; }
