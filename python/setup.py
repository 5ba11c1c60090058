"""The setuptools build of the ndm Python package (pyproject.toml holds its
metadata; docs/python.md, "Installing with pip").

The pure-Python packages (ndm, ndm_train_torch) are taken as they are. The
extension ndm._ndm is not compiled by setuptools: build_ext below has the
project's own CMake build (python/CMakeLists.txt, target ndm_python) make it,
so the flags, the pybind11 and the library are those of every other build of
the tree. Where the extension comes from, the first that applies:

  NDM_PYTHON_EXTENSION=FILE   a _ndm*.so built already (<build>/python/ndm/;
                              an absolute path),
                              copied as it is; it links the libndm.so of its
                              build tree, which must stay where it is
  otherwise                   a CMake build of its own under setuptools'
                              build directory (python/build/), the library
                              linked in statically (NDM_PYTHON_STATIC_LIBNDM),
                              only the target ndm_python; NDM_CMAKE_ARGS adds
                              options (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache),
                              CMAKE_BUILD_PARALLEL_LEVEL sets the jobs

The traces and models ndm ships (data/traces, data/models) go into the
package as ndm/data/, as `cmake --install` puts them in share/ndm: the
installed package finds them (ndm/__init__.py) after the checkout is gone.

Building needs the checkout around python/ (CMakeLists.txt, src/, include/,
data/): a source distribution alone cannot build the extension.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the repository: CMakeLists.txt, src/, include/


def project_version():
    """The version of the CMake project (project(ndm VERSION x.y.z)), the one ndm.__version__ reports."""
    try:
        text = (ROOT / "CMakeLists.txt").read_text()
    except OSError:
        sys.exit(f"ndm setup.py: {ROOT / 'CMakeLists.txt'} not found: build from the repository's python/ folder")
    m = re.search(r"project\(\s*ndm\s+VERSION\s+([0-9][0-9.]*)", text)
    if not m:
        sys.exit(f"ndm setup.py: no project(ndm VERSION ...) in {ROOT / 'CMakeLists.txt'}")
    return m.group(1)


class BuildPyWithData(build_py):
    """build_py, then data/traces and data/models into the package's ndm/data/ (not generate.sh, a
    developer's script, as CMakeLists.txt's install leaves it out)."""

    def run(self):
        super().run()
        for kind in ("traces", "models"):
            source, target = ROOT / "data" / kind, Path(self.build_lib) / "ndm" / "data" / kind
            if not source.is_dir():
                sys.exit(f"ndm setup.py: {source} not found: build from the repository's python/ folder")
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("generate.sh"))


class CMakeBuildExt(build_ext):
    """build_ext for ndm._ndm: the CMake target ndm_python, or the file NDM_PYTHON_EXTENSION names."""

    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        prebuilt = os.environ.get("NDM_PYTHON_EXTENSION")
        built = self.check_prebuilt(Path(prebuilt)) if prebuilt else self.cmake_build()
        shutil.copyfile(built, target)
        shutil.copymode(built, target)

    @staticmethod
    def check_prebuilt(path):
        """The named file, when it is an extension for this interpreter."""
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        if not path.is_absolute():  # pip runs this file in a folder of its choosing
            sys.exit(f"ndm setup.py: NDM_PYTHON_EXTENSION={path}: give an absolute path")
        if not path.is_file():
            sys.exit(f"ndm setup.py: NDM_PYTHON_EXTENSION={path}: no such file")
        if not path.name.endswith(suffix):
            sys.exit(f"ndm setup.py: NDM_PYTHON_EXTENSION={path}: not built for this interpreter "
                     f"({sys.executable} needs a name ending in {suffix})")
        return path

    def cmake_build(self):
        """Configures and builds the target ndm_python in a build tree of its own; returns the module's path."""
        cmake = shutil.which("cmake")
        if cmake is None:
            sys.exit("ndm setup.py: cmake not found (Debian: apt-get install cmake; scripts/setup.sh installs "
                     "everything the build needs)")
        build_dir = Path(self.build_temp).resolve() / "cmake"
        configure = [cmake, "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     f"-DNDM_PYTHON_EXECUTABLE={sys.executable}", "-DNDM_PYTHON_STATIC_LIBNDM=ON",
                     "-DNDM_BUILD_TESTS=OFF", "-DNDM_BUILD_BENCH=OFF", "-DNDM_BUILD_TOOLS=OFF",
                     "-DNDM_BUILD_EXAMPLES=OFF"]
        if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("NDM_CMAKE_ARGS", ""))
        for cmd in (configure, [cmake, "--build", str(build_dir), "--target", "ndm_python"]):
            print("ndm setup.py: " + shlex.join(cmd), flush=True)
            subprocess.run(cmd, check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        module = build_dir / "python" / "ndm" / ("_ndm" + suffix)
        if not module.is_file():
            sys.exit(f"ndm setup.py: the CMake build made no {module}")
        return module


setup(
    version=project_version(),
    packages=["ndm", "ndm_train_torch"],
    ext_modules=[Extension("ndm._ndm", sources=[])],
    cmdclass={"build_py": BuildPyWithData, "build_ext": CMakeBuildExt},
)
