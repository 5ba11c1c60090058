// The labelled datasets of ndm-train (ndm/train.hpp, docs/ndm-training.md
// §1–3) from Python: one shard of a generate run as dataset text, and the
// shards joined into the whole run's dataset. ndm_train_torch.generate
// spreads the shards over Dask workers with these two.
#include <pybind11/stl.h>

#include <limits>
#include <optional>
#include <sstream>

#include "bindings.hpp"
#include "ndm/train.hpp"

namespace ndm::python {

namespace {

std::string dataset_text(const train::Dataset& d, const std::string& comment) {
    std::ostringstream out;
    train::write_dataset(out, d, comment);
    return out.str();
}

}  // namespace

void bind_datasets(py::module_& m) {
    m.def(
        "generate_dataset",
        [](std::uint64_t seed, std::size_t scenarios, double seconds, std::vector<std::string> controllers,
           std::optional<std::string> ndm_options, std::optional<std::string> ndm_bbr_options, double compete,
           std::size_t first, std::optional<std::size_t> count) {
            if (scenarios < 1 || scenarios > 100'000) throw std::invalid_argument("scenarios: must be 1 to 100000");
            check_range("seconds", seconds, 1, 600);
            check_range("compete", compete, 0, 1);
            if (controllers.empty()) throw std::invalid_argument("controllers: at least one");
            train::GenerateOptions o;
            o.seed = seed;
            o.scenarios = scenarios;
            o.seconds = seconds;
            o.controllers = std::move(controllers);
            if (ndm_options) o.ndm_options = *ndm_options;
            if (ndm_bbr_options) o.ndm_bbr_options = *ndm_bbr_options;
            o.compete = compete;
            o.first = first;
            o.count = count.value_or(std::numeric_limits<std::size_t>::max());
            const auto d = run_without_gil([&] { return train::generate(o); });
            return dataset_text(d, train::dataset_comment(o));
        },
        py::kw_only(), py::arg("seed") = 1, py::arg("scenarios") = 600, py::arg("seconds") = 12.0,
        py::arg("controllers") = std::vector<std::string>{"cubic", "reno", "ndm-cubic"},
        py::arg("ndm_options") = py::none(), py::arg("ndm_bbr_options") = py::none(), py::arg("compete") = 0.0, py::arg("first") = 0,
        py::arg("count") = py::none(),
        "The dataset text (docs/ndm-training.md §3) of the scenarios [first, first + count) of the list "
        "`ndm-train generate --seed SEED --scenarios SCENARIOS ...` runs; the shards of a list joined in order "
        "(join_datasets) are that command's file, byte for byte.");
    m.def(
        "join_datasets",
        [](const std::vector<std::string>& parts) {
            if (parts.empty()) throw std::invalid_argument("join_datasets: no parts");
            train::Dataset all;
            for (std::size_t i = 0; i < parts.size(); ++i) {
                std::istringstream in(parts[i]);
                auto d = train::read_dataset(in);
                if (i == 0) all.comment = d.comment;
                if (d.comment != all.comment)
                    throw std::invalid_argument("join_datasets: part " + std::to_string(i) +
                                                " comes from another generate run (its provenance line differs)");
                all.scenarios.insert(all.scenarios.end(), d.scenarios.begin(), d.scenarios.end());
                all.records.insert(all.records.end(), std::make_move_iterator(d.records.begin()),
                                   std::make_move_iterator(d.records.end()));
            }
            return dataset_text(all, all.comment);
        },
        py::arg("parts"),
        "The dataset texts of a generate run's shards (generate_dataset), in list order, as one dataset text.");
}

}  // namespace ndm::python
