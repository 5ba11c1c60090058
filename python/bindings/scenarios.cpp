// The scenario generator of ndm-train (ndm/train.hpp, docs/ndm-training.md
// §1): seeded random network scenarios, the episodes of ndm.gym.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "ndm/train.hpp"

namespace ndm::python {

namespace {

py::dict scenario_dict(const train::ScenarioSpec& s) {
    py::dict d;
    d["id"] = s.info.id;
    d["seed"] = s.info.seed;
    d["family"] = s.info.family;
    d["split"] = std::string(train::split_name(s.info.split));
    d["description"] = s.info.description;
    d["controller"] = s.controller;
    d["cc_options"] = s.cc_options;
    d["profile"] = s.profile;
    d["packet_size"] = s.packet_size;
    d["seconds"] = s.seconds;
    d["competitors"] = s.competitors;
    d["competitor_start"] = s.competitor_start;
    return d;
}

}  // namespace

void bind_scenarios(py::module_& m) {
    m.def(
        "scenarios",
        [](std::uint64_t seed, std::size_t count, double seconds, double compete) {
            if (count > 1'000'000) throw std::invalid_argument("scenarios: count must be at most 1000000");
            check_range("compete", compete, 0, 1);
            train::GenerateOptions o;
            o.seed = seed;
            o.scenarios = count;
            o.seconds = seconds;
            o.compete = compete;
            py::list out;
            for (const auto& s : train::make_scenarios(o)) out.append(scenario_dict(s));
            return out;
        },
        py::kw_only(), py::arg("seed") = 1, py::arg("count") = 600, py::arg("seconds") = 12.0,
        py::arg("compete") = 0.0,
        "The scenarios `ndm-train generate --seed SEED --scenarios COUNT` runs, as dicts (profile, seconds, "
        "packet_size, family, split, ...); the same arguments give the same list.");
}

}  // namespace ndm::python
