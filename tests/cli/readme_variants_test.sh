#!/usr/bin/env bash
# Every command README.md shows works. The commands are read from the README
# itself: each line of a ```sh block and each `inline` command that starts with
# scripts/…sh, bench/…sh, an ndm-* tool or sudo. Each must be known below:
# either run here (scripts/run.sh variants in virtual time with a short -t
# where that is equivalent, real sockets for the default; with --out in a
# temporary directory) or named with the test that covers it and why it is not
# run here. A README command this test does not know, or one it knows that the
# README no longer shows, fails the test. Also: every option of the tools'
# usage blocks is in their --help, the presets, controllers and example specs
# the README names exist, and run.sh's own defaults (--profile, --cc, -t, --out)
# give way to the user's.
# Usage: readme_variants_test.sh SOURCE_DIR BUILD_DIR JSON_CHECK
set -euo pipefail
src=$1
build=$2
check=$3
readme="$src/README.md"
tools="$build/tools"
out=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
get() { "$check" get "$1" "$2" || fail "no $2 in $1"; }

# --- The commands the README shows.
readme_commands() {
  awk '/^```sh$/ { f = 1; next } /^```/ { f = 0 } f' "$readme" | sed -E 's/[[:space:]]+#.*$//; /^[[:space:]]*$/d'
  grep -o '`[^`]*`' "$readme" | tr -d '`' |
    grep -E '^((scripts|bench)/[^ ]+\.sh( .*)?|(sudo )?ndm-[a-z]+ .+)$' || true
}
mapfile -t shown < <(readme_commands | sort -u)
((${#shown[@]} >= 15)) || fail "found only ${#shown[@]} commands in $readme: ${shown[*]}"

# --- Helpers for the runs.
# run_sh NAME ARGS...: scripts/run.sh ARGS with the tools of this build; the output in $out/NAME.txt.
run_sh() {
  local name=$1
  shift
  NDM_BUILD_DIR="$build" timeout 120 bash "$src/scripts/run.sh" "$@" > "$out/$name.txt" 2>&1 ||
    fail "scripts/run.sh $* exited $?: $(tail -5 "$out/$name.txt")"
}
# expect_results DIR PROFILE CCS SECONDS PACKET_SIZE VIRTUAL REPEATS: what results.json says was run.
expect_results() {
  local f="$1/results.json" i=0 names=()
  [ -s "$f" ] || fail "$f missing"
  [ "$(get "$f" profile)" = "$2" ] || fail "$f: profile $(get "$f" profile), expected $2"
  while "$check" get "$f" "controllers.$i.name" > /dev/null 2>&1; do
    names+=("$(get "$f" "controllers.$i.name")")
    [ "$(get "$f" "controllers.$i.runs.0.byte_exact")" = true ] || fail "$f: controller $i not byte-exact"
    i=$((i + 1))
  done
  [ "$(IFS=,; echo "${names[*]}")" = "$3" ] || fail "$f: controllers ${names[*]}, expected $3"
  awk -v d="$(get "$f" duration_s)" -v w="$4" 'BEGIN { exit !(d == w) }' || fail "$f: duration $(get "$f" duration_s) s, expected $4"
  [ "$(get "$f" packet_size)" = "$5" ] || fail "$f: packet size $(get "$f" packet_size), expected $5"
  [ "$(get "$f" virtual_time)" = "$6" ] || fail "$f: virtual_time $(get "$f" virtual_time), expected $6"
  [ "$(get "$f" repeats)" = "$7" ] || fail "$f: repeats $(get "$f" repeats), expected $7"
  [ "$(get "$f" controllers.0.runs.$(($7 - 1)).repeat)" = $(($7 - 1)) ] || fail "$f: not $7 runs"
}
free_port() {
  local p
  for _ in $(seq 20); do
    p=$((20000 + RANDOM % 20000))
    command -v ss > /dev/null && ss -Hlun "sport = :$p" 2>/dev/null | grep -q . && continue
    break
  done
  echo "$p"
}
wait_for() {  # FILE TEXT: until FILE contains TEXT (5 s at most)
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  fail "no '$2' in $1: $(cat "$1")"
}

# --- run_readme CMD: runs one README command (or says which test covers it).
run_readme() {
  case "$1" in
    "scripts/run.sh")  # real sockets as the README runs it; 1 s per controller instead of 10
      run_sh default -t 1 --out "$out/default"
      grep -q "Comparison summary" "$out/default.txt" || fail "scripts/run.sh: no comparison summary"
      expect_results "$out/default" urban-lte ndm-lkm,cubic,reno 1 65507 false 1 ;;
    "scripts/run.sh --virtual")  # already virtual time: the whole 10 s
      run_sh virtual --virtual --out "$out/virtual" -q
      expect_results "$out/virtual" urban-lte ndm-lkm,cubic,reno 10 65507 true 1 ;;
    "scripts/run.sh --repeat 10")
      run_sh repeat --repeat 10 --virtual -t 2 --out "$out/repeat" -q
      expect_results "$out/repeat" urban-lte ndm-lkm,cubic,reno 2 65507 true 10 ;;
    "scripts/run.sh --packets realistic")
      run_sh realistic --packets realistic --virtual -t 2 --out "$out/realistic" -q
      expect_results "$out/realistic" urban-lte ndm-lkm,cubic,reno 2 1452 true 1 ;;
    "scripts/run.sh --profile lte-verizon")
      run_sh verizon --profile lte-verizon --virtual -t 2 --out "$out/verizon" -q
      expect_results "$out/verizon" lte-verizon ndm-lkm,cubic,reno 2 65507 true 1 ;;
    "ndm-compare --compete --cc ndm,cubic -t 60 --packets realistic --profile delay=25ms,rate=20mbit,queue=86pkt")
      timeout 120 "$tools/ndm-compare" --compete --cc ndm,cubic -t 60 --packets realistic \
        --profile delay=25ms,rate=20mbit,queue=86pkt --out "$out/compete" > "$out/compete.txt" 2>&1 ||
        fail "ndm-compare --compete exited $?: $(tail -5 "$out/compete.txt")"
      grep -q "Jain's fairness index" "$out/compete.txt" || fail "--compete: no fairness index"
      [ "$(get "$out/compete/compete.json" runs.0.flows.1.controller)" = cubic ] &&
        [ "$(get "$out/compete/compete.json" runs.0.flows.1.byte_exact)" = true ] || fail "--compete: flows" ;;
    "ndm-compare --cc-plugin ./libndm-example-cc-plugin.so --cc delay-aimd,cubic --virtual")
      [ -f "$build/examples/libndm-example-cc-plugin.so" ] || fail "the example plugin was not built (NDM_BUILD_EXAMPLES)"
      (cd "$build/examples" && "$tools/ndm-compare" --cc-plugin ./libndm-example-cc-plugin.so --cc delay-aimd,cubic \
        --virtual -t 2 -q --out "$out/plugin" > "$out/plugin.txt" 2>&1) ||
        fail "ndm-compare with the example plugin exited $?: $(tail -5 "$out/plugin.txt")"
      expect_results "$out/plugin" urban-lte delay-aimd,cubic 2 65507 true 1 ;;
    "ndm-compare --list-cc")
      "$tools/ndm-compare" --list-cc > "$out/cc.txt"
      for c in reno cubic ndm-lkm ndm; do grep -q "^$c " "$out/cc.txt" || fail "--list-cc: no $c"; done ;;
    "ndm-emu presets")
      "$tools/ndm-emu" presets > "$out/presets.txt"
      for p in "${presets[@]}"; do grep -q "^$p\b" "$out/presets.txt" || fail "ndm-emu presets: no $p"; done ;;
    "ndm-sim -n 32M --rate 50 --delay 25 --loss 1 --cc cubic")
      timeout 60 "$tools/ndm-sim" -n 32M --rate 50 --delay 25 --loss 1 --cc cubic > "$out/sim.txt" 2>&1 ||
        fail "ndm-sim exited $?: $(tail -5 "$out/sim.txt")"
      grep -q "^byte-exact: yes" "$out/sim.txt" || fail "ndm-sim: $(tail -3 "$out/sim.txt")" ;;
    "ndm-emu relay --listen 127.0.0.1:9000 --to 127.0.0.1:9001 --profile urban-lte")
      # Free ports instead of 9000/9001; traffic through the relay: cli: ndm-emu relay probes ...
      local p
      p=$(free_port)
      "$tools/ndm-emu" relay --listen "127.0.0.1:$p" --to "127.0.0.1:$((p + 1))" --profile urban-lte 2> "$out/relay.txt" &
      pids+=($!)
      wait_for "$out/relay.txt" "^ndm-emu relay:"
      kill -INT "${pids[-1]}"
      wait "${pids[-1]}" || fail "ndm-emu relay exited $? after SIGINT: $(cat "$out/relay.txt")" ;;
    "ndm-recv -1" | "ndm-send --insecure -c 127.0.0.1 -t 10 -C cubic --profile urban-lte")
      # The pair, once (for the second of the two): a free port instead of 5201, 2 s instead of 10.
      [ "$1" = "ndm-recv -1" ] && return 0
      local p
      p=$(free_port)
      "$tools/ndm-recv" -1 -p "$p" > "$out/recv.txt" 2>&1 &
      pids+=($!)
      wait_for "$out/recv.txt" listening
      timeout 30 "$tools/ndm-send" --insecure -c 127.0.0.1 -p "$p" -t 2 -C cubic --profile urban-lte > "$out/send.txt" 2>&1 ||
        fail "ndm-send exited $?: $(tail -5 "$out/send.txt")"
      wait "${pids[-1]}" || fail "ndm-recv -1 exited $?: $(tail -5 "$out/recv.txt")"
      grep -q "receiver  (byte-exact)" "$out/send.txt" || fail "ndm-send: not byte-exact: $(tail -5 "$out/send.txt")" ;;
    "ndm-send --session-file FILE")
      # Two runs against one server: the second resumes with what the first kept.
      local p
      p=$(free_port)
      "$tools/ndm-recv" -p "$p" > "$out/recv_session.txt" 2>&1 &
      pids+=($!)
      wait_for "$out/recv_session.txt" listening
      local run
      for run in 1 2; do
        timeout 30 "$tools/ndm-send" --insecure -c 127.0.0.1 -p "$p" -n 1M -V --session-file "$out/session" \
          > "$out/send_session$run.txt" 2>&1 || fail "ndm-send --session-file (run $run) exited $?: $(tail -5 "$out/send_session$run.txt")"
      done
      kill "${pids[-1]}"
      wait "${pids[-1]}" || true
      ! grep -q "resumed" "$out/send_session1.txt" || fail "the first ndm-send --session-file run resumed"
      grep -q "resumed (--session-file)" "$out/send_session2.txt" ||
        fail "the second ndm-send --session-file run did not resume: $(grep -i "tls" "$out/send_session2.txt")" ;;
    "sudo ndm-emu shell --profile urban-lte -- sh -c 'iperf3 -c \$NDM_EMU_HOST_ADDR -C cubic'")
      echo "  not run here (root, and an iperf3 server on the host): covered by cli: ndm-emu shell delay and loss through TUN and a namespace" ;;
    "scripts/test.sh" | "scripts/test.sh --sanitize")
      echo "  not run here: it runs this suite (.ci/run runs both)" ;;
    "cmake --install build --prefix /usr/local")
      echo "  not run here: it writes to /usr/local; covered by install: the installed, relocated tools run from / with the install's traces" ;;
    "cd build && cpack -G DEB && sudo apt install ./ndm_*.deb")
      echo "  not run here: it installs a package (root); .ci/run builds the .deb, installs it, runs its tools and purges it" ;;
    "scripts/setup.sh")
      echo "  not run here: it installs Debian packages; scripts/build.sh runs it before every build" ;;
    "scripts/fuzz.sh all 60")
      echo "  not run here: builds the libFuzzer targets (clang) in build-fuzz/ and fuzzes each for 60 s (.ci/run runs it for 20 s)" ;;
    "scripts/fuzz.sh list")
      local targets
      targets=$(bash "$src/scripts/fuzz.sh" list) || fail "scripts/fuzz.sh list exited $?"
      for t in packet_parser connection endpoint profile_parser trace_parser model_parser; do
        grep -qx "$t" <<<"$targets" || fail "scripts/fuzz.sh list does not name $t: $targets"
      done ;;
    "bench/load_check.sh")
      echo "  run small by CTest: load: one ndm-recv serves 200 tests, 5 of -P 100 and an Initial flood with RSS and descriptors flat" ;;
    "bench/ndm_eval.sh" | "bench/eval_plots.sh")
      echo "  not run here: benchmark sweeps of minutes (bench/RESULTS.md); eval_plots.sh rewrites bench/plots/" ;;
    "ndm-train ship --root . --name ndm-default")
      echo "  not run here: minutes of training that rewrite data/models/; the ndm-train doctest cases check the shipped files and the pipeline's parts" ;;
    "ndm-handshake --alpn h3 connect 127.0.0.1 4433 --ca cert.pem" | "ndm-handshake --alpn h3 listen -p 4433 --cert c.pem --key k.pem")
      echo "  needs another QUIC stack as its peer: covered by cli: ndm-handshake and ngtcp2's gtlsserver/gtlsclient complete a QUIC v1 h3 handshake both ways" ;;
    "ndm-send -J" | "ndm-recv -J" | "ndm-sim --json")
      echo "  named for their provenance record: covered by cli: ndm-send -J shape, -n, --emu loss and a vanishing server and cli: provenance: git commit at build time, ndm-sim --json" ;;
    "python3 -c \"import ndm; print(ndm.simulate(profile='urban-lte', cc='cubic', duration=10))\"")
      if [ -d "$build/python/ndm" ]; then  # Debian's interpreter, with the build's package
        PYTHONPATH="$build/python" /usr/bin/python3 -c "import ndm; print(ndm.simulate(profile='urban-lte', cc='cubic', duration=10))" \
          > "$out/python.txt" 2>&1 || fail "python3 -c 'import ndm ...' failed: $(tail -5 "$out/python.txt")"
        grep -q "'byte_exact': True" "$out/python.txt" || fail "ndm.simulate: $(head -c 500 "$out/python.txt")"
      else
        echo "  not built with the Python bindings (NDM_BUILD_PYTHON=OFF): covered by the python: tests when they are"
      fi ;;
    *) return 1 ;;
  esac
}
known=(
  "scripts/run.sh" "scripts/run.sh --virtual" "scripts/run.sh --repeat 10" "scripts/run.sh --packets realistic"
  "scripts/run.sh --profile lte-verizon"
  "ndm-compare --compete --cc ndm,cubic -t 60 --packets realistic --profile delay=25ms,rate=20mbit,queue=86pkt"
  "ndm-compare --list-cc" "ndm-emu presets" "ndm-sim -n 32M --rate 50 --delay 25 --loss 1 --cc cubic"
  "ndm-emu relay --listen 127.0.0.1:9000 --to 127.0.0.1:9001 --profile urban-lte"
  "ndm-recv -1" "ndm-send --insecure -c 127.0.0.1 -t 10 -C cubic --profile urban-lte"
  "ndm-send --session-file FILE"
  "sudo ndm-emu shell --profile urban-lte -- sh -c 'iperf3 -c \$NDM_EMU_HOST_ADDR -C cubic'"
  "scripts/test.sh" "scripts/test.sh --sanitize" "scripts/setup.sh" "scripts/fuzz.sh all 60" "scripts/fuzz.sh list"
  "bench/ndm_eval.sh" "bench/eval_plots.sh" "bench/load_check.sh" "ndm-train ship --root . --name ndm-default"
  "ndm-handshake --alpn h3 connect 127.0.0.1 4433 --ca cert.pem" "ndm-handshake --alpn h3 listen -p 4433 --cert c.pem --key k.pem"
  "python3 -c \"import ndm; print(ndm.simulate(profile='urban-lte', cc='cubic', duration=10))\""
)
# The presets the README's "Emulator profiles" section names.
presets=(urban-lte urban-lte-inorder lte-verizon lte-tmobile lte-att-driving wifi lossy-wifi satellite 3g)

for k in "${known[@]}"; do
  grep -qxF -- "$k" <<<"$(printf '%s\n' "${shown[@]}")" || fail "README.md no longer shows '$k': update this test"
done
for c in "${shown[@]}"; do
  echo "README: $c"
  run_readme "$c" || fail "README.md shows '$c', which this test does not know: add it to run_readme"
done

# --- Usage blocks (the plain ``` blocks): every option they name is in the tool's --help.
awk '/^```/ { if (in_block) { in_block = 0; f = 0 } else { in_block = 1; f = ($0 == "```") }; next }
     f { if ($1 ~ /^ndm-/) t = $1
         line = $0
         while (match(line, /(^|[[ |])--?[A-Za-z0-9][A-Za-z0-9-]*/)) {
           o = substr(line, RSTART, RLENGTH); sub(/^[[ |]/, "", o); print t, o
           line = substr(line, RSTART + RLENGTH) } }' "$readme" | sort -u > "$out/usage.txt"
for tool in ndm-compare ndm-send ndm-recv; do
  grep -q "^$tool " "$out/usage.txt" || fail "no usage block for $tool in README.md"
  "$tools/$tool" --help > "$out/$tool-help.txt"
done
while read -r tool o; do
  grep -qE -- "(^|[ ,])$o([ ,=]|$)" "$out/$tool-help.txt" 2>/dev/null ||
    fail "README's usage of $tool shows $o, which $tool --help does not know"
done < "$out/usage.txt"

# --- Names and specs the README uses in the text.
"$tools/ndm-compare" --list-profiles > "$out/profiles.txt"
for p in "${presets[@]}"; do
  grep -qF "\`$p\`" "$readme" || fail "README.md no longer names the preset $p: update this test"
  grep -q "^$p\b" "$out/profiles.txt" || fail "ndm-compare --list-profiles: no $p"
done
for spec in "urban-lte,loss=1%" "delay=50ms,jitter=20ms,loss=5%,rate=20mbit,queue=100pkt"; do
  grep -qF "\`$spec\`" "$readme" || fail "README.md no longer shows the profile $spec: update this test"
  "$tools/ndm-compare" --virtual -t 1 --cc reno --profile "$spec" -q --out "$out/spec" > /dev/null 2>&1 ||
    fail "the README's profile $spec does not run"
done
grep -qF '`ndm-cubic:forgive=4:standing=0.3`' "$readme" || fail "README.md no longer shows ndm-cubic:forgive=4:standing=0.3"
"$tools/ndm-compare" --virtual -t 1 --cc ndm-cubic:forgive=4:standing=0.3 -q --out "$out/ccopt" > /dev/null 2>&1 ||
  fail "the README's controller entry ndm-cubic:forgive=4:standing=0.3 does not run"

# --- run.sh: the user's --profile, --cc, -t and --out replace its defaults in every spelling.
run_sh eq --virtual --profile=wifi --cc=reno "--time=1" --out="$out/eq" -q
expect_results "$out/eq" wifi reno 1 65507 true 1
run_sh cluster --virtual --cc cubic,reno -qt1 --out "$out/cluster"
expect_results "$out/cluster" urban-lte cubic,reno 1 65507 true 1
run_sh values --virtual -l 1452 -t 1 --seed 5 --out "$out/values" -q  # values are not taken for options
expect_results "$out/values" urban-lte ndm-lkm,cubic,reno 1 1452 true 1
echo "ok: ${#shown[@]} README commands"
