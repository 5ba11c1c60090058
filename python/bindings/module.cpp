// ndm._ndm: the extension module behind the ndm Python package (python/ndm,
// docs/python.md).
#include "bindings.hpp"
#include "ndm/version.hpp"

PYBIND11_MODULE(_ndm, m) {
    m.doc() = "ndm's virtual-time simulator, emulator profiles and controller registry (see docs/python.md)";
    m.attr("__version__") = std::string(ndm::version());
    ndm::python::bind_profiles(m);
    ndm::python::bind_controllers(m);
    ndm::python::bind_runs(m);
    ndm::python::bind_scenarios(m);
    ndm::python::bind_datasets(m);
    ndm::python::bind_connections(m);
}
