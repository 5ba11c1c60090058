// Emulator profiles, presets and the trace search path as Python objects.
#include <filesystem>

#include <pybind11/stl.h>

#include "bindings.hpp"

namespace ndm::python {

namespace {

// An emulator profile parsed once: what every run function accepts as
// `profile=`, with its description as ndm-compare prints it.
struct Profile {
    std::string text;
    emu::Profile profile;
    [[nodiscard]] std::string up() const { return emu::describe(profile.up); }
    [[nodiscard]] std::string down() const { return emu::describe(profile.down); }
    [[nodiscard]] std::string description() const { return "up: " + up() + "; down: " + down(); }
};

}  // namespace

ProfileArg profile_arg(const py::handle& h) {
    if (py::isinstance<Profile>(h)) {
        const auto& p = h.cast<const Profile&>();
        return {p.text, p.profile};
    }
    if (py::isinstance<py::str>(h)) {
        auto text = h.cast<std::string>();
        return {text, emu::parse_profile(text)};
    }
    if (py::isinstance(h, py::module_::import("os").attr("PathLike"))) {
        auto text = py::str(py::module_::import("os").attr("fspath")(h)).cast<std::string>();
        return {text, emu::parse_profile(text)};
    }
    throw py::type_error("profile must be a str, an os.PathLike or an ndm.Profile");
}

void bind_profiles(py::module_& m) {
    py::class_<Profile>(m, "Profile",
                        "An emulator profile: a preset name with optional overrides (\"urban-lte,loss=1%\"), "
                        "a spec string (\"delay=50ms,jitter=20ms,loss=5%\", keys in docs/emulator.md) or a JSON "
                        "file. Raises ValueError with the message the tools print for a bad one.")
        .def(py::init([](const py::object& spec) {
                 const ProfileArg a = profile_arg(spec);
                 return Profile{a.text, a.profile};
             }),
             py::arg("spec"))
        .def_readonly("spec", &Profile::text, "the text the profile was parsed from")
        .def_property_readonly("name", [](const Profile& p) { return p.profile.name; })
        .def_property_readonly("up", &Profile::up, "the sender → receiver direction, described")
        .def_property_readonly("down", &Profile::down, "the receiver → sender direction, described")
        .def_property_readonly("description", &Profile::description)
        .def("__repr__", [](const Profile& p) { return "ndm.Profile(" + py::repr(py::str(p.text)).cast<std::string>() + ")"; })
        .def("__str__", &Profile::description);

    py::class_<emu::PresetInfo>(m, "Preset", "A named emulator profile shipped with ndm (ndm-emu presets).")
        .def_readonly("name", &emu::PresetInfo::name)
        .def_readonly("spec", &emu::PresetInfo::spec, "the spec string it expands to")
        .def_readonly("description", &emu::PresetInfo::description)
        .def("profile", [](const emu::PresetInfo& p) { return Profile{p.name, emu::parse_profile(p.name)}; })
        .def("__repr__", [](const emu::PresetInfo& p) { return "ndm.Preset(" + p.name + ": " + p.spec + ")"; });
    m.def("presets", [] { return emu::presets(); }, "The emulator presets (ndm-compare --list-profiles).");
    m.def("trace_search_path", [] { return emu::trace_search_path(); },
          "Where trace=NAME is looked up: $NDM_DATA_DIR/traces, then the build's data/traces.");
}

}  // namespace ndm::python
