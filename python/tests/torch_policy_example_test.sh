#!/bin/sh
# examples/python/gym_torch_policy.py (run from examples/python): REINFORCE in
# ndm.gym.CongestionEnv, seeded. Passes when the mean reward of the last
# quarter of the episodes is above that of the first quarter.
py="$1"
if ! "$py" -c "import torch" 2> /dev/null; then
  [ "${NDM_REQUIRE_TORCH:-0}" = 1 ] && { echo "FAIL: no torch (NDM_REQUIRE_TORCH=1)"; exit 1; }
  echo "SKIP: $py cannot import torch (scripts/setup.sh installs python3-torch)"
  exit 77
fi
out=$("$py" gym_torch_policy.py --episodes 40 --max-steps 60) || { echo "FAIL: exit $?"; exit 1; }
echo "$out" | tail -1
echo "$out" | tail -1 | "$py" -c '
import re, sys
m = re.search(r"first \d+ (-?[0-9.]+), last \d+ (-?[0-9.]+)", sys.stdin.read())
assert m, "no summary line"
first, last = float(m.group(1)), float(m.group(2))
assert last > first, f"no improvement: first {first}, last {last}"
print(f"PASS: mean reward {first} -> {last}")'
