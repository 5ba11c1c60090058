#!/usr/bin/env bash
# The key tree of `ndm-send -J` (a 1 s forward test on loopback) against
# iperf3 3.12's (tests/data/iperf3_keys.txt, recorded from `iperf3 -c
# 127.0.0.1 -t 1 -J`: one path a line, arrays as []): every iperf3 key must be
# present unless tests/data/iperf3_keys_exceptions.txt lists it with a reason,
# and no listed key may be present (the list only shrinks). Also checks the
# values behind the keys iperf3 parity added (CPU of both sides, RTTs, ...). ndm's own extra
# keys are documented in docs/ndm-send-json.md (checked by ndm_send_more_test.sh).
set -euo pipefail
send="$1"
recv="$2"
data="$3"
# shellcheck source=send_recv_lib.sh
source "$(dirname "$0")/send_recv_lib.sh"

start_server
timeout 20 "$send" --insecure -c 127.0.0.1 -p "$port" -t 1 -J > "$out/ndm.json" 2> "$out/err.txt" || fail "ndm-send -J exit $?"
finish_server
python3 - "$out/ndm.json" "$data/iperf3_keys.txt" "$data/iperf3_keys_exceptions.txt" > "$out/keys.txt" 2>&1 <<'PY' \
  || fail "key tree: $(cat "$out/keys.txt")"
import sys, json

def paths(v, p=""):
    if isinstance(v, dict):
        for k, x in v.items():
            q = f"{p}.{k}" if p else k
            yield q
            yield from paths(x, q)
    elif isinstance(v, list):
        yield p + "[]"
        for x in v:
            yield from paths(x, p + "[]")

doc = json.load(open(sys.argv[1]))
ndm = set(paths(doc))
# The values behind the new keys, not only their presence.
import time
end, start = doc["end"], doc["start"]
cpu = end["cpu_utilization_percent"]
assert cpu["host_total"] > 0 and cpu["remote_total"] > 0, f"cpu {cpu}"
assert abs(cpu["remote_total"] - cpu["remote_user"] - cpu["remote_system"]) < 1e-6, "remote_total"
assert end["receiver_congestion"] == "reno", "the server's default controller"
# iperf3's names carry the same values, so its scripts read ndm's output.
assert end["sender_tcp_congestion"] == end["sender_congestion"] != "", "sender_tcp_congestion"
assert end["receiver_tcp_congestion"] == end["receiver_congestion"], "receiver_tcp_congestion"
assert abs(start["timestamp"]["timesecs"] - time.time()) < 120, "timestamp"
s0 = end["streams"][0]["sender"]
assert 0 < s0["min_rtt"] <= s0["mean_rtt"] <= s0["max_rtt"], "rtt"
assert start["connected"][0]["local_port"] == int(start["connected"][0]["local_host"].rsplit(":", 1)[1]), "local_port"
iperf = {l.strip() for l in open(sys.argv[2]) if l.strip()}
exceptions = {}
for line in open(sys.argv[3]):
    if line.strip() and not line.startswith("#"):
        key, _, reason = line.strip().partition("\t")
        assert reason.strip(), f"exception {key} has no reason"
        exceptions[key] = reason
problems = [f"iperf3 key {k} missing from ndm-send -J" for k in sorted(iperf - ndm - exceptions.keys())]
problems += [f"{k} is listed as an exception but ndm-send -J has it" for k in sorted(exceptions.keys() & ndm)]
problems += [f"{k} is listed as an exception but is no iperf3 key" for k in sorted(exceptions.keys() - iperf)]
print("\n".join(problems))
print(f"{len(iperf & ndm)} of {len(iperf)} iperf3 keys shared, {len(exceptions)} listed exceptions")
sys.exit(1 if problems else 0)
PY
cat "$out/keys.txt"
echo PASS
