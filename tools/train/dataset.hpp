// The ndm-train dataset: one record per congestion event a sender's
// controller saw in a simulated scenario, with the features the `ndm`
// controller computes at that moment and the ground truth from the emulator's
// drop reasons (docs/ndm-training.md §3 documents the file format).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "cc/ndm/features.hpp"

namespace ndm::train {

using cc::ndm::FeatureVector;
using cc::ndm::kFeatureCount;

// The rounds kept before each loss (the GRU's truncated history).
inline constexpr std::size_t kMaxRounds = 16;

// Which packets of an event were dropped why. `spurious` counts packets the
// transport declared lost although the emulator delivered them (late:
// reordering), inferred as packets_lost minus the dropped packets attributed.
enum Cause : std::size_t { kRandom = 0, kBurst, kQueue, kAqm, kOutage, kSpurious, kCauseCount };
const char* cause_name(std::size_t c);

enum class Split : std::uint8_t { train, val, test };
const char* split_name(Split s);

struct Record {
    std::uint32_t scenario = 0;
    std::uint64_t seed = 0;
    std::string controller;  // the sender's controller: cubic, reno, ndm
    std::string family;      // scenario family (generate.hpp)
    Split split = Split::train;
    double time_s = 0;       // virtual seconds since the connection started
    int label = 0;           // 1 congestive, 0 not (random/burst drops, or only late packets)
    // A decision: the event's largest lost packet was sent after the current
    // recovery period began (RFC 9002 §7.3.2), so the `ndm` controller runs
    // its model on it; false: part of a decision already taken.
    bool decision = false;
    bool persistent = false;   // persistent congestion (the model is not consulted)
    std::uint32_t lost = 0;    // packets the event declared lost
    std::array<std::uint32_t, kCauseCount> causes{};
    std::vector<FeatureVector> rounds;  // the last ≤ kMaxRounds completed rounds, oldest first
    FeatureVector at_loss{};

    [[nodiscard]] bool spurious_only() const { return causes[kSpurious] == lost; }
};

// One line of scenario metadata ("#S id seed family split description").
struct ScenarioInfo {
    std::uint32_t id = 0;
    std::uint64_t seed = 0;
    std::string family;
    Split split = Split::train;
    std::string description;
};

struct Dataset {
    std::vector<ScenarioInfo> scenarios;
    std::vector<Record> records;
};

inline constexpr const char* kDatasetMagic = "# ndm-dataset v1";

void write_header(std::ostream& out, const std::string& comment);
void write_scenario(std::ostream& out, const ScenarioInfo& s);
void write_record(std::ostream& out, const Record& r);
void write_dataset(std::ostream& out, const Dataset& d, const std::string& comment);
// Throws std::invalid_argument naming the line and the problem.
Dataset read_dataset(std::istream& in);
Dataset load_dataset(const std::string& path);
void save_dataset(const std::string& path, const Dataset& d, const std::string& comment);

}  // namespace ndm::train
