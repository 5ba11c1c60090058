// The pieces of the ndm extension module (ndm._ndm, docs/python.md), one file
// each: profiles and presets, controllers written in Python, and the runs
// (simulate, compare, compete). Only the library's public API (include/ndm)
// is used, as by the tools.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ndm/emu.hpp"
#include "ndm/stats.hpp"
#include "ndm/time.hpp"

namespace ndm::python {

namespace py = pybind11;

void bind_profiles(py::module_& m);
void bind_controllers(py::module_& m);
void bind_runs(py::module_& m);
void bind_scenarios(py::module_& m);
void bind_datasets(py::module_& m);
void bind_connections(py::module_& m);

// Thrown through the library's C++ frames when Python code called from them
// (a controller written in Python) raised: not a std::exception, so no C++
// handler mistakes it for a failure of its own. The Python error itself is
// kept (with the GIL held) and raised again by run_without_gil().
struct PythonCallbackFailed {};
// Keeps the pending Python error; call with the GIL held.
void keep_python_error(py::error_already_set&& e);

// Runs f with the GIL released, so that Python controllers (which take it
// back per call) and other Python threads run; raises a Python error a
// callback kept as the Python exception itself.
[[noreturn]] void raise_kept_python_error();
template <typename F>
auto run_without_gil(F&& f) -> decltype(f()) {
    try {
        py::gil_scoped_release release;
        return f();
    } catch (const PythonCallbackFailed&) {
        raise_kept_python_error();
        throw;  // not reached: raise_kept_python_error throws
    }
}

// A profile as the functions take it: a spec string (preset, "delay=..",
// JSON file) or an ndm.Profile.
struct ProfileArg {
    std::string text;
    emu::Profile profile;
};
ProfileArg profile_arg(const py::handle& h);

// A connection's statistics as a dict (runs.cpp: the runs' client_stats).
py::dict stats_dict(const ConnectionStats& s);

// Time as Python sees it: integer nanoseconds (exact, as the core counts).
inline std::int64_t ns(Duration d) { return d.count(); }
inline std::int64_t ns(Instant t) { return t.time_since_epoch().count(); }

// A number within [lo, hi], or std::invalid_argument naming the argument.
void check_range(const char* name, double value, double lo, double hi);

}  // namespace ndm::python
