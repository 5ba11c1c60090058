"""The ndm loss classifier (docs/ndm-training.md) trained in PyTorch: reads the
dataset `ndm-train generate` writes, trains the logistic and GRU models the
C++ trainer trains, and exports the .ndmm file the SIMD engine runs. Run as
`ndm-train-torch --help` once the package is installed (docs/python.md), or
from a checkout as `PYTHONPATH=python /usr/bin/python3 -m ndm_train_torch --help`."""
