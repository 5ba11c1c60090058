#include "ndm/train.hpp"

#include "util/input_file.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace ndm::train {

const char* cause_name(std::size_t c) {
    static constexpr const char* kNames[kCauseCount] = {"random", "burst", "queue", "aqm", "outage", "spurious"};
    return c < kCauseCount ? kNames[c] : "?";
}

const char* split_name(Split s) {
    switch (s) {
        case Split::train: return "train";
        case Split::val: return "val";
        case Split::test: return "test";
    }
    return "?";
}

namespace {

Split parse_split(std::string_view s, std::size_t line) {
    if (s == "train") return Split::train;
    if (s == "val") return Split::val;
    if (s == "test") return Split::test;
    throw std::invalid_argument(fmt::format("dataset line {}: unknown split \"{}\"", line, s));
}

// Splits on tabs; fields may be empty only where the format allows.
std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t at = 0;
    while (true) {
        const auto tab = line.find('\t', at);
        out.push_back(line.substr(at, tab == std::string_view::npos ? std::string_view::npos : tab - at));
        if (tab == std::string_view::npos) break;
        at = tab + 1;
    }
    return out;
}

template <typename T>
T parse_uint(std::string_view s, std::size_t line, const char* what) {
    T v{};
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size())
        throw std::invalid_argument(fmt::format("dataset line {}: bad {} \"{}\"", line, what, s));
    return v;
}

double parse_double(std::string_view s, std::size_t line, const char* what) {
    // std::from_chars for double is in libstdc++ 11+; strtod needs a terminated copy.
    const std::string copy(s);
    char* end = nullptr;
    const double v = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(v))
        throw std::invalid_argument(fmt::format("dataset line {}: bad {} \"{}\"", line, what, s));
    return v;
}

// %.9g round-trips every float exactly.
void put_features(std::ostream& out, const FeatureVector& f) {
    for (const float x : f) out << '\t' << fmt::format("{:.9g}", x);
}

void write_header(std::ostream& out, const std::string& comment) {
    out << kDatasetMagic << '\n';
    out << "# features: q_now q_p50 q_p90 slope entropy loss_rate rate_ratio loss_run (src/cc/ndm/features.hpp)\n";
    out << "# R scenario seed controller family split time_s label decision persistent lost "
           "random burst queue aqm outage spurious n_rounds rounds[n_rounds*8] at_loss[8]\n";
    if (!comment.empty()) out << "# " << comment << '\n';
}

void write_scenario(std::ostream& out, const ScenarioInfo& s) {
    out << "S\t" << s.id << '\t' << s.seed << '\t' << s.family << '\t' << split_name(s.split) << '\t'
        << s.description << '\n';
}

void write_record(std::ostream& out, const Record& r) {
    out << "R\t" << r.scenario << '\t' << r.seed << '\t' << r.controller << '\t' << r.family << '\t'
        << split_name(r.split) << '\t' << fmt::format("{:.6f}", r.time_s) << '\t' << r.label << '\t'
        << (r.decision ? 1 : 0) << '\t' << (r.persistent ? 1 : 0) << '\t' << r.lost;
    for (const auto c : r.causes) out << '\t' << c;
    out << '\t' << r.rounds.size();
    for (const auto& f : r.rounds) put_features(out, f);
    put_features(out, r.at_loss);
    out << '\n';
}

}  // namespace

void write_dataset(std::ostream& out, const Dataset& d, const std::string& comment) {
    write_header(out, comment);
    for (const auto& s : d.scenarios) write_scenario(out, s);
    for (const auto& r : d.records) write_record(out, r);
}

Dataset read_dataset(std::istream& in) {
    Dataset d;
    std::string line;
    std::size_t n = 0;
    bool magic = false;
    while (std::getline(in, line)) {
        ++n;
        if (n == 1) {
            if (line != kDatasetMagic)
                throw std::invalid_argument(fmt::format("dataset line 1: expected \"{}\" (not an ndm-train dataset, "
                                                        "or another version)", kDatasetMagic));
            magic = true;
            continue;
        }
        // write_header's fourth line is the comment, when there is one.
        if (n == 4 && line.rfind("# ", 0) == 0) d.comment = line.substr(2);
        if (line.empty() || line[0] == '#') continue;
        const auto f = fields(line);
        if (f[0] == "S") {
            if (f.size() != 6) throw std::invalid_argument(fmt::format("dataset line {}: scenario line needs 6 fields", n));
            ScenarioInfo s;
            s.id = parse_uint<std::uint32_t>(f[1], n, "scenario id");
            s.seed = parse_uint<std::uint64_t>(f[2], n, "seed");
            s.family = std::string(f[3]);
            s.split = parse_split(f[4], n);
            s.description = std::string(f[5]);
            d.scenarios.push_back(std::move(s));
            continue;
        }
        if (f[0] != "R") throw std::invalid_argument(fmt::format("dataset line {}: unknown line type \"{}\"", n, f[0]));
        constexpr std::size_t kFixed = 11 + kCauseCount + 1;
        if (f.size() < kFixed + kFeatureCount)
            throw std::invalid_argument(fmt::format("dataset line {}: record too short ({} fields)", n, f.size()));
        Record r;
        r.scenario = parse_uint<std::uint32_t>(f[1], n, "scenario id");
        r.seed = parse_uint<std::uint64_t>(f[2], n, "seed");
        r.controller = std::string(f[3]);
        r.family = std::string(f[4]);
        r.split = parse_split(f[5], n);
        r.time_s = parse_double(f[6], n, "time");
        const auto label = parse_uint<unsigned>(f[7], n, "label");
        const auto decision = parse_uint<unsigned>(f[8], n, "decision flag");
        const auto persistent = parse_uint<unsigned>(f[9], n, "persistent flag");
        if (label > 1 || decision > 1 || persistent > 1)
            throw std::invalid_argument(fmt::format("dataset line {}: label and flags must be 0 or 1", n));
        r.label = static_cast<int>(label);
        r.decision = decision == 1;
        r.persistent = persistent == 1;
        r.lost = parse_uint<std::uint32_t>(f[10], n, "lost count");
        for (std::size_t c = 0; c < kCauseCount; ++c) r.causes[c] = parse_uint<std::uint32_t>(f[11 + c], n, "cause count");
        const auto rounds = parse_uint<std::size_t>(f[11 + kCauseCount], n, "round count");
        if (rounds > kMaxRounds)
            throw std::invalid_argument(fmt::format("dataset line {}: {} rounds (at most {})", n, rounds, kMaxRounds));
        if (f.size() != kFixed + (rounds + 1) * kFeatureCount)
            throw std::invalid_argument(fmt::format("dataset line {}: {} fields, {} expected for {} rounds", n, f.size(),
                                                    kFixed + (rounds + 1) * kFeatureCount, rounds));
        std::size_t at = kFixed;
        r.rounds.resize(rounds);
        for (auto& v : r.rounds)
            for (auto& x : v) x = static_cast<float>(parse_double(f[at++], n, "feature"));
        for (auto& x : r.at_loss) x = static_cast<float>(parse_double(f[at++], n, "feature"));
        d.records.push_back(std::move(r));
    }
    if (!magic) throw std::invalid_argument("dataset: empty input");
    return d;
}

Dataset load_dataset(const std::string& path) {
    try {  // streamed, so only checked: a regular file within the cap
        util::check_input_file(path, util::kMaxDatasetFileBytes);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("cannot read dataset \"{}\": {}", path, e.what()));
    }
    std::ifstream in(path);
    if (!in) throw std::invalid_argument(fmt::format("cannot read dataset \"{}\"", path));
    try {
        return read_dataset(in);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("\"{}\": {}", path, e.what()));
    }
}

void save_dataset(const std::string& path, const Dataset& d, const std::string& comment) {
    std::ofstream out(path);
    if (!out) throw std::runtime_error(fmt::format("cannot write \"{}\"", path));
    write_dataset(out, d, comment);
    if (!out) throw std::runtime_error(fmt::format("cannot write \"{}\"", path));
}

}  // namespace ndm::train
