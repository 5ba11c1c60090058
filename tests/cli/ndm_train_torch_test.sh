#!/usr/bin/env bash
# The loss classifier trained in PyTorch (python/ndm_train_torch,
# docs/ndm-training.md §9) against the C++ trainer on the same small seeded
# dataset: for logistic regression and the GRU, the exported .ndmm runs in the
# engine (scalar and the best SIMD kernel) with PyTorch's scores within 1e-5
# on every event, and reaches the C++ trainer's held-out AUC (through the
# engine) within AUC_TOLERANCE. Also: a C++-trained model read by PyTorch
# scores as in the engine, training is deterministic byte for byte, and bad
# input is a one-line error with exit code 2.
# Skips (77) when Debian's Python has no torch, unless NDM_REQUIRE_TORCH=1.
set -euo pipefail
train="$1"  # ndm-train
src="$2"    # source tree (python/ndm_train_torch)
# The small set's held-out split has 189 events, 32 of them congestive: one
# AUC near 0.85 there has a standard error of 0.044 (Hanley & McNeil,
# Radiology 1982), so the trainers differ only beyond about one of those.
# (0.02 held by chance: since packet numbers are skipped, RFC 9000 §21.4, the
# simulated dataset differs and the GRUs score 0.853 and 0.833.)
AUC_TOLERANCE=0.05

py=/usr/bin/python3  # Debian's interpreter, for which python3-torch is built
skip() {
  if [ "${NDM_REQUIRE_TORCH:-0}" = 1 ]; then echo "FAIL: $* (NDM_REQUIRE_TORCH=1)"; exit 1; fi
  echo "SKIP: $*"
  exit 77
}
[ -x "$py" ] || skip "no $py"
"$py" -c "import torch, numpy" 2>/dev/null || skip "$py cannot import torch and numpy (scripts/setup.sh installs python3-torch)"
export PYTHONPATH="$src/python" PYTHONDONTWRITEBYTECODE=1  # nothing written into the source tree
torch_train() { "$py" -m ndm_train_torch "$@"; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out"
"$train" generate -n 200 --seconds 5 --seed 3 -q -o data.tsv > /dev/null

auc_of() {  # the held-out AUC of a model file, through the engine
  "$train" evaluate -m "$1" -d data.tsv --split test | sed -n 's/.* AUC=\([0-9.]*\) .*/\1/p' | head -1
}

for model in logistic gru; do
  "$train" train -d data.tsv --model "$model" -q -o "cpp_$model.ndmm" > /dev/null
  torch_train train -d data.tsv --model "$model" -q -o "torch_$model.ndmm" --scores "torch_$model.scores" > "torch_$model.txt"
  for simd in scalar auto; do
    "$train" evaluate -m "torch_$model.ndmm" -d data.tsv --split all --simd "$simd" --scores "engine_$model.$simd" > /dev/null
    torch_train compare "engine_$model.$simd" "torch_$model.scores" --tolerance 1e-5 \
      || { echo "FAIL: $model: the engine ($simd) and PyTorch disagree"; exit 1; }
  done
  cpp=$(auc_of "cpp_$model.ndmm")
  torch=$(auc_of "torch_$model.ndmm")
  echo "$model: held-out AUC C++ $cpp, PyTorch $torch"
  awk -v t="$torch" -v c="$cpp" -v tol="$AUC_TOLERANCE" 'BEGIN { exit !(t != "" && c != "" && t >= c - tol) }' \
    || { echo "FAIL: $model: PyTorch's held-out AUC $torch below the C++ trainer's $cpp - $AUC_TOLERANCE"; exit 1; }
  # PyTorch's own metrics line says the same AUC the engine does.
  grep -q "^held-out test: .* AUC=$torch " "torch_$model.txt" || { echo "FAIL: $model: PyTorch's AUC is not $torch"; exit 1; }
done

# The reader and the network, independently of the export: the C++ trainer's
# GRU, run by PyTorch, scores as the engine runs it.
"$train" evaluate -m cpp_gru.ndmm -d data.tsv --split all --scores engine_cpp.scores > /dev/null
torch_train score -m cpp_gru.ndmm -d data.tsv --split all --scores torch_cpp.scores > /dev/null
torch_train compare engine_cpp.scores torch_cpp.scores || { echo "FAIL: the C++ GRU scores differently in PyTorch"; exit 1; }

# Deterministic: the same command writes the same bytes.
torch_train train -d data.tsv --model logistic -q -o again.ndmm > /dev/null
cmp -s torch_logistic.ndmm again.ndmm || { echo "FAIL: two trainings wrote different model files"; exit 1; }

# Bad input: one line naming the problem, exit code 2.
expect_bad() {
  local rc=0 err
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: exit $rc, not 2: $*"; exit 1; }
  [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || { echo "FAIL: not one line: $*: $err"; exit 1; }
}
expect_bad torch_train train -d data.tsv --model svm
expect_bad torch_train train -d data.tsv --hidden 9
expect_bad torch_train train -d /etc/hostname
expect_bad torch_train score -m data.tsv -d data.tsv
head -c 100 torch_gru.ndmm > cut.ndmm
expect_bad torch_train score -m cut.ndmm -d data.tsv
echo "PASS"
