// Profile parsing: compact spec strings, JSON profile files and named presets
// (include/ndm/emu.hpp lists the keys). Every error is one line naming the problem.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "emu/delay_model.hpp"
#include "emu/loss_model.hpp"
#include "emu/rate_queue.hpp"
#include "emu/delivery_trace.hpp"
#include "ndm/emu.hpp"
#include "util/input_file.hpp"

namespace ndm::emu {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument("profile: " + msg); }

std::string lower(std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// A leading decimal number and the unit text after it.
std::pair<double, std::string> number_and_unit(const std::string& key, std::string_view v) {
    double x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{} || !std::isfinite(x)) fail(key + ": '" + std::string(v) + "' is not a number");
    return {x, lower(trim(std::string_view(p, static_cast<std::size_t>(v.data() + v.size() - p))))};
}

Duration parse_time(const std::string& key, std::string_view v) {
    const auto [x, unit] = number_and_unit(key, v);
    double ns = 0;
    if (unit == "ns") ns = x;
    else if (unit == "us" || unit == "µs") ns = x * 1e3;
    else if (unit == "ms") ns = x * 1e6;
    else if (unit == "s") ns = x * 1e9;
    else if (unit.empty()) fail(key + ": '" + std::string(v) + "' needs a unit (ns, us, ms, s)");
    else fail(key + ": unknown time unit '" + unit + "' (use ns, us, ms, s)");
    if (x < 0) fail(key + ": " + std::string(v) + " must be >= 0");
    if (ns > 3600e9) fail(key + ": " + std::string(v) + " is out of range (at most 3600s)");
    return Duration(static_cast<Duration::rep>(std::llround(ns)));
}

double parse_probability(const std::string& key, std::string_view v) {
    const auto [x, unit] = number_and_unit(key, v);
    double p = x;
    if (unit == "%") p = x / 100;
    else if (!unit.empty()) fail(key + ": unknown unit '" + unit + "' (write a percentage like 5% or a fraction like 0.05)");
    if (!(p >= 0 && p <= 1)) {
        fail(key + ": " + std::string(v) + " is out of range [0, 1]" + (unit.empty() && x > 1 ? " (write " + std::string(v) + "% for a percentage)" : ""));
    }
    return p;
}

double parse_rate(const std::string& key, std::string_view v) {
    const auto [x, unit] = number_and_unit(key, v);
    // tc's units: "bit" suffixes are bits/s, "bps" suffixes are BYTES/s (tc(8)).
    static const std::map<std::string, double> units = {
        {"bit", 1},         {"kbit", 1e3},        {"mbit", 1e6},        {"gbit", 1e9},     {"tbit", 1e12},
        {"bps", 8},         {"kbps", 8e3},        {"mbps", 8e6},        {"gbps", 8e9},     {"kibit", 1024.0},
        {"mibit", 1048576.0}, {"gibit", 1073741824.0}};
    const auto it = units.find(unit);
    if (unit.empty()) fail(key + ": '" + std::string(v) + "' needs a unit (bit, kbit, mbit, gbit; bps/kbps/mbps = bytes/s as in tc)");
    if (it == units.end()) fail(key + ": unknown rate unit '" + unit + "' (use bit, kbit, mbit, gbit; bps/kbps/mbps = bytes/s as in tc)");
    const double bps = x * it->second;
    if (!(bps >= 1000 && bps <= 1e13)) fail(key + ": " + std::string(v) + " is out of range [1kbit, 10tbit]");
    return bps;
}

long long parse_integer(const std::string& key, std::string_view v, long long lo, long long hi) {
    long long x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{} || p != v.data() + v.size()) fail(key + ": '" + std::string(v) + "' is not an integer");
    if (x < lo || x > hi) fail(key + ": " + std::string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
}

// "100pkt", "150kb", or both: "100pkt/150kb".
void parse_queue(const std::string& key, std::string_view v, QueueConfig& q) {
    q.packets = 0;
    q.bytes = 0;
    std::size_t start = 0;
    while (start <= v.size()) {
        const std::size_t slash = v.find('/', start);
        const std::string_view part = v.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        const auto [x, unit] = number_and_unit(key, part);
        if (x < 1 || x != std::floor(x)) fail(key + ": '" + std::string(part) + "' must be a whole number >= 1");
        if (unit == "pkt" || unit == "pkts" || unit == "p" || unit == "packets") {
            if (x > 1e7) fail(key + ": " + std::string(part) + " is out of range (at most 10000000pkt)");
            q.packets = static_cast<std::size_t>(x);
        } else {
            static const std::map<std::string, double> units = {{"b", 1}, {"kb", 1e3}, {"mb", 1e6}, {"kib", 1024.0}, {"mib", 1048576.0}};
            const auto it = units.find(unit);
            if (it == units.end())
                fail(key + ": '" + std::string(part) + "' needs a unit: pkt for packets, or b, kb, mb, kib, mib for bytes");
            const double bytes = x * it->second;
            if (bytes > 1e10) fail(key + ": " + std::string(part) + " is out of range (at most 10gb)");
            q.bytes = static_cast<std::size_t>(bytes);
        }
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
}

std::vector<double> parse_probability_list(const std::string& key, std::string_view v, std::size_t max_n) {
    std::vector<double> out;
    std::size_t start = 0;
    while (true) {
        const std::size_t slash = v.find('/', start);
        out.push_back(parse_probability(key, v.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start)));
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    if (out.size() > max_n) fail(key + ": at most " + std::to_string(max_n) + " values separated by '/'");
    return out;
}

// "10s@5s": a blackhole of 10 s from 5 s after the link's first datagram.
OutageConfig parse_outage(const std::string& key, std::string_view v) {
    const std::size_t at = v.find('@');
    if (at == std::string_view::npos)
        fail(key + ": '" + std::string(v) + "' is not DUR@START (e.g. outage=10s@5s: dark for 10 s from 5 s in)");
    OutageConfig o;
    o.duration = parse_time(key, trim(v.substr(0, at)));
    o.start = parse_time(key, trim(v.substr(at + 1)));
    if (o.duration <= Duration::zero()) fail(key + ": the duration in '" + std::string(v) + "' must be > 0");
    return o;
}

const char* const kKeys =
    "delay, jitter, distribution, order, reorder, gap, loss, gemodel, lossstate, duplicate, corrupt, rate, "
    "overhead, queue, aqm, codel-target, codel-interval, ecn, red-min, red-max, red-p, red-wq, ecn-step, ecn-step-ect1, "
    "trace, outage";

struct Parser {
    std::string source;  // for messages: the preset or file
    std::map<std::string, std::shared_ptr<const Trace>> traces;
    bool gap_set[2] = {false, false};

    std::shared_ptr<const Trace> trace(const std::string& path) {
        auto& t = traces[path];
        if (!t) t = std::make_shared<const Trace>(Trace::load(path));
        return t;
    }

    void apply(Profile& p, const std::string& raw_key, std::string_view value) {
        std::string key = lower(trim(raw_key));
        value = trim(value);
        bool dirs[2] = {true, true};  // up, down
        if (key.rfind("up.", 0) == 0) {
            dirs[1] = false;
            key.erase(0, 3);
        } else if (key.rfind("down.", 0) == 0) {
            dirs[0] = false;
            key.erase(0, 5);
        }
        if (value.empty()) fail(key + ": missing value");
        if (key == "trace") {
            apply_trace(p, dirs, std::string(value));
            return;
        }
        for (int d = 0; d < 2; ++d)
            if (dirs[d]) apply_one(d == 0 ? p.up : p.down, d, key, value);
    }

    void apply_trace(Profile& p, const bool dirs[2], const std::string& name) {
        std::string paths[2];
        try {
            paths[0] = paths[1] = resolve_trace_path(name);
        } catch (const std::invalid_argument& e) {
            // "trace=Verizon-LTE-short" means NAME.up for uplink and NAME.down for downlink.
            try {
                if (dirs[0]) paths[0] = resolve_trace_path(name + ".up");
                if (dirs[1]) paths[1] = resolve_trace_path(name + ".down");
            } catch (const std::invalid_argument&) {
                fail(std::string("trace: ") + e.what());
            }
        }
        for (int d = 0; d < 2; ++d) {
            if (!dirs[d]) continue;
            DirectionConfig& c = d == 0 ? p.up : p.down;
            try {
                c.trace.trace = trace(paths[d]);
            } catch (const std::invalid_argument& e) {
                fail(std::string("trace: ") + e.what());
            }
            c.queue.rate_bps = 0;  // the trace is the service process
        }
    }

    void apply_one(DirectionConfig& c, int dir, const std::string& key, std::string_view v) {
        if (key == "delay") {
            c.delay.delay = parse_time(key, v);
        } else if (key == "jitter") {
            c.delay.jitter = parse_time(key, v);
        } else if (key == "distribution") {
            const std::string s = lower(v);
            if (s == "uniform") c.delay.distribution = Distribution::uniform;
            else if (s == "normal") c.delay.distribution = Distribution::normal;
            else if (s == "pareto") c.delay.distribution = Distribution::pareto;
            else if (s == "paretonormal") c.delay.distribution = Distribution::paretonormal;
            else fail("distribution: unknown '" + std::string(v) + "' (use uniform, normal, pareto, paretonormal)");
        } else if (key == "order") {
            const std::string s = lower(v);
            if (s == "inorder" || s == "in-order") c.delay.ordering = Ordering::in_order;
            else if (s == "iid" || s == "netem") c.delay.ordering = Ordering::iid;
            else fail("order: unknown '" + std::string(v) + "' (use inorder or iid)");
        } else if (key == "reorder") {
            c.delay.reorder = parse_probability(key, v);
        } else if (key == "gap") {
            c.delay.gap = static_cast<std::uint32_t>(parse_integer(key, v, 1, 1'000'000));
            gap_set[dir] = true;
        } else if (key == "loss") {
            c.loss = {};
            c.loss.kind = LossKind::bernoulli;
            c.loss.p = parse_probability(key, v);
        } else if (key == "gemodel") {
            // netem `gemodel p [r [1-h [1-k]]]`; tc defaults r = 1−p, 1−h = 1, 1−k = 0.
            const auto x = parse_probability_list(key, v, 4);
            c.loss = {};
            c.loss.kind = LossKind::gilbert_elliott;
            c.loss.p = x[0];
            c.loss.r = x.size() > 1 ? x[1] : 1 - x[0];
            c.loss.loss_bad = x.size() > 2 ? x[2] : 1;
            c.loss.loss_good = x.size() > 3 ? x[3] : 0;
        } else if (key == "lossstate") {
            // netem `state p13 [p31 [p32 [p23 [p14]]]]`; defaults p31 = 1−p13, p32 = 0, p23 = 1, p14 = 0.
            const auto x = parse_probability_list(key, v, 5);
            c.loss = {};
            c.loss.kind = LossKind::four_state;
            c.loss.p13 = x[0];
            c.loss.p31 = x.size() > 1 ? x[1] : 1 - x[0];
            c.loss.p32 = x.size() > 2 ? x[2] : 0;
            c.loss.p23 = x.size() > 3 ? x[3] : 1;
            c.loss.p14 = x.size() > 4 ? x[4] : 0;
        } else if (key == "duplicate") {
            c.duplicate = parse_probability(key, v);
        } else if (key == "corrupt") {
            c.corrupt = parse_probability(key, v);
        } else if (key == "rate") {
            c.queue.rate_bps = parse_rate(key, v);
            c.trace.trace.reset();  // a fixed rate replaces a trace set before (e.g. by a preset)
        } else if (key == "overhead") {
            c.queue.overhead = static_cast<std::int32_t>(parse_integer(key, v, -1400, 65535));
        } else if (key == "queue") {
            parse_queue(key, v, c.queue);
        } else if (key == "aqm") {
            const std::string s = lower(v);
            if (s == "droptail" || s == "none") c.queue.discipline = QueueDiscipline::droptail;
            else if (s == "codel") c.queue.discipline = QueueDiscipline::codel;
            else fail("aqm: unknown '" + std::string(v) + "' (use droptail or codel)");
        } else if (key == "codel-target") {
            c.queue.codel_target = parse_time(key, v);
        } else if (key == "codel-interval") {
            c.queue.codel_interval = parse_time(key, v);
        } else if (key == "ecn") {
            parse_ecn(c, v);
        } else if (key == "red-min") {
            c.queue.red_min = static_cast<std::size_t>(parse_integer(key, v, 0, 1'000'000));
        } else if (key == "red-max") {
            c.queue.red_max = static_cast<std::size_t>(parse_integer(key, v, 1, 1'000'000));
        } else if (key == "red-p") {
            c.queue.red_max_p = parse_probability(key, v);
        } else if (key == "red-wq") {
            c.queue.red_wq = parse_probability(key, v);
        } else if (key == "ecn-step") {
            c.queue.ecn_step = parse_time(key, v);
        } else if (key == "ecn-step-ect1") {
            const std::string s = lower(v);
            if (s != "on" && s != "off") fail("ecn-step-ect1: unknown '" + std::string(v) + "' (use on or off)");
            c.queue.ecn_step_ect1_only = s == "on";
        } else if (key == "outage") {
            // Repeatable: each one adds a phase; "none" clears (e.g. a preset's).
            if (lower(v) == "none") {
                c.outages.clear();
            } else {
                if (c.outages.size() == kMaxOutages) fail(key + ": at most " + std::to_string(kMaxOutages) + " phases");
                c.outages.push_back(parse_outage(key, v));
            }
        } else {
            fail("unknown key '" + key + "' (known: " + kKeys + "; prefix up. or down. for one direction)");
        }
    }

    // ecn=none|red|codel|step sets the marking (QueueConfig::ecn); ecn=bleach
    // a path that clears the codepoint. Each replaces what an earlier ecn= set.
    static void parse_ecn(DirectionConfig& c, std::string_view v) {
        const std::string s = lower(v);
        c.ecn_bleach = s == "bleach";
        if (s == "none" || s == "off" || s == "bleach") c.queue.ecn = EcnMarking::none;
        else if (s == "red") c.queue.ecn = EcnMarking::red;
        else if (s == "codel") c.queue.ecn = EcnMarking::codel;
        else if (s == "step") c.queue.ecn = EcnMarking::step;
        else fail("ecn: unknown '" + std::string(v) + "' (use none, red, codel, step or bleach)");
    }

    void finish(Profile& p) {
        for (int d = 0; d < 2; ++d) {
            DirectionConfig& c = d == 0 ? p.up : p.down;
            const char* dir = d == 0 ? "up" : "down";
            if (gap_set[d] && c.delay.reorder == 0) fail(std::string(dir) + ": gap needs reorder (netem refuses gap alone)");
            try {
                validate(c.loss);
                validate(c.delay);
                validate(c.queue, c.trace);
            } catch (const std::invalid_argument& e) {
                fail(std::string(dir) + ": " + e.what());
            }
        }
    }
};

// Splits "a=1,b=2" into key/value pairs; a first item without '=' is a preset name.
void apply_spec(Parser& parser, Profile& p, std::string_view text, bool allow_preset);

const PresetInfo* find_preset(std::string_view name) {
    for (const auto& pr : presets())
        if (pr.name == name) return &pr;
    return nullptr;
}

void apply_spec(Parser& parser, Profile& p, std::string_view text, bool allow_preset) {
    bool first = true;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        start = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
        if (item.empty()) continue;
        const std::size_t eq = item.find('=');
        if (eq == std::string_view::npos) {
            if (first && allow_preset) {
                const PresetInfo* pr = find_preset(lower(item));
                if (pr == nullptr) {
                    std::string names;
                    for (const auto& x : presets()) names += (names.empty() ? "" : ", ") + x.name;
                    fail("unknown preset '" + std::string(item) + "' (presets: " + names + ")");
                }
                apply_spec(parser, p, pr->spec, false);
            } else {
                fail("'" + std::string(item) + "' is not key=value");
            }
        } else {
            parser.apply(p, std::string(item.substr(0, eq)), item.substr(eq + 1));
        }
        first = false;
    }
}

std::string json_value(const std::string& key, const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return v.dump();
    fail(key + ": expected a string or a number, got " + std::string(v.type_name()));
}

std::string json_string(const std::string& key, const nlohmann::json& v) {
    if (!v.is_string()) fail(key + ": expected a string, got " + std::string(v.type_name()));
    return v.get<std::string>();
}

// A JSON value; an array of them, applied in order, only for the one
// repeatable key ("outage": ["3s@2s", "1s@9s"]): for any other key an array
// would silently keep its last element.
void apply_json(Parser& parser, Profile& p, const std::string& key, const nlohmann::json& v) {
    if (!v.is_array()) {
        parser.apply(p, key, json_value(key, v));
        return;
    }
    const std::string base = lower(trim(key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1)));
    if (base != "outage")
        fail(key + ": expected a string or a number, got array (only outage takes an array, one phase an element)");
    for (const auto& e : v) parser.apply(p, key, json_value(key, e));
}

}  // namespace

const std::vector<PresetInfo>& presets() {
    // One-way values per direction. Sources: docs/emulator.md R3, R8 (3GPP QCI,
    // Huang et al. 2012, Pantheon's calibrated queues) and the README's seed experiment.
    static const std::vector<PresetInfo> list = {
        {"none", "", "no impairment: packets pass at once"},
        {"urban-lte", "delay=50ms,jitter=20ms,distribution=uniform,order=iid,loss=5%",
         "the seed experiment: tc netem 'delay 50ms 20ms loss 5%' on loopback (both directions, uniform jitter, "
         "netem's i.i.d. reordering; RTT ~100 ms)"},
        {"urban-lte-inorder", "delay=50ms,jitter=20ms,distribution=uniform,order=inorder,loss=5%",
         "urban-lte with order-preserving jitter, as an LTE bearer delivers (RLC in-sequence)"},
        {"lte-verizon", "trace=Verizon-LTE-short,delay=20ms,queue=200pkt",
         "Mahimahi Verizon-LTE-short trace (5.0/6.0 Mbit/s down/up mean), 20 ms one way, 200-packet droptail "
         "(Pantheon cellular Q 130-426; 1500-byte packets: a 64 KB datagram holds 44 places)"},
        {"lte-tmobile", "trace=TMobile-LTE-short,delay=20ms,queue=400pkt",
         "Mahimahi TMobile-LTE-short trace (16.7/13.3 Mbit/s down/up mean), 20 ms one way, 400-packet droptail"},
        {"lte-att-driving", "trace=ATT-LTE-driving-2016,delay=30ms,queue=200pkt",
         "Mahimahi ATT-LTE-driving-2016 trace (4.6/1.9 Mbit/s down/up mean), 30 ms one way, 200-packet droptail"},
        {"wifi", "delay=5ms,jitter=2ms,distribution=normal,order=inorder,rate=50mbit,queue=256pkt,loss=0.1%",
         "home Wi-Fi: 50 Mbit/s, 5 ms +-2 ms (normal, in order), 0.1 % residual loss"},
        {"lossy-wifi",
         "delay=5ms,jitter=5ms,distribution=normal,order=inorder,rate=20mbit,queue=256pkt,gemodel=1%/30%/100%/0%",
         "congested Wi-Fi: 20 Mbit/s, Gilbert-Elliott bursts (3.2 % loss, mean burst 3.3 packets)"},
        {"satellite",
         "delay=300ms,jitter=5ms,distribution=normal,order=inorder,queue=1000pkt,loss=0.1%,up.rate=5mbit,"
         "down.rate=20mbit",
         "GEO satellite: ~600 ms RTT, 20/5 Mbit/s down/up, 0.1 % loss"},
        {"3g",
         "delay=100ms,jitter=10ms,distribution=normal,order=inorder,queue=100pkt,loss=0.5%,up.rate=1mbit,"
         "down.rate=2mbit",
         "HSPA-class 3G: ~200 ms RTT, 2/1 Mbit/s down/up, 0.5 % loss"},
    };
    return list;
}

Profile load_profile_json(const std::string& path) {
    std::string text;
    try {
        text = util::read_input_file(path, util::kMaxProfileFileBytes);
    } catch (const std::invalid_argument& e) {
        fail("cannot read '" + path + "': " + e.what());
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        std::string what = e.what();
        std::replace(what.begin(), what.end(), '\n', ' ');
        fail(path + ": invalid JSON: " + what);
    }
    if (!j.is_object()) fail(path + ": expected a JSON object");
    Parser parser;
    Profile p;
    p.name = path;
    try {
        if (auto it = j.find("preset"); it != j.end()) apply_spec(parser, p, json_string("preset", *it), true);
        for (const auto& [key, value] : j.items()) {
            if (key == "name" || key == "description") (void)json_string(key, value);
            if (key == "preset" || key == "name" || key == "description") continue;
            if (key == "up" || key == "down") {
                if (!value.is_object()) fail(key + ": expected an object, got " + std::string(value.type_name()));
                for (const auto& [k2, v2] : value.items()) apply_json(parser, p, key + "." + k2, v2);
                continue;
            }
            apply_json(parser, p, key, value);
        }
        if (auto it = j.find("name"); it != j.end()) p.name = it->get<std::string>();
        parser.finish(p);
    } catch (const std::invalid_argument& e) {
        // Name the file: "profile: FILE: key: problem".
        std::string what = e.what();
        if (what.rfind("profile: ", 0) == 0) what.erase(0, 9);
        throw std::invalid_argument("profile: " + path + ": " + what);
    }
    return p;
}

Profile parse_profile(std::string_view text) {
    text = trim(text);
    if (text.empty()) fail("empty profile (give a preset name, key=value list or a .json file)");
    const std::string s(text);
    std::error_code ec;
    if (s.size() > 5 && s.substr(s.size() - 5) == ".json") return load_profile_json(s);
    if (s.find('=') == std::string::npos && s.find(',') == std::string::npos && s.find('/') != std::string::npos &&
        std::filesystem::is_regular_file(s, ec))
        return load_profile_json(s);
    Parser parser;
    Profile p;
    p.name = s;
    apply_spec(parser, p, text, true);
    parser.finish(p);
    return p;
}

std::string describe(const DirectionConfig& c) {
    std::string out;
    auto add = [&](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
    auto ms = [](Duration d) {
        return fmt::format("{:g}ms", static_cast<double>(d.count()) / 1e6);
    };
    auto pct = [](double p) {
        return fmt::format("{:g}%", p * 100);
    };
    static const char* dist[] = {"uniform", "normal", "pareto", "paretonormal"};
    if (c.delay.delay > Duration::zero()) add("delay=" + ms(c.delay.delay));
    if (c.delay.jitter > Duration::zero())
        add("jitter=" + ms(c.delay.jitter) + "(" + dist[static_cast<int>(c.delay.distribution)] + "," +
            (c.delay.ordering == Ordering::iid ? "iid" : "inorder") + ")");
    if (c.delay.reorder > 0) add("reorder=" + pct(c.delay.reorder) + " gap=" + std::to_string(c.delay.gap));
    switch (c.loss.kind) {
        case LossKind::none: break;
        case LossKind::bernoulli: add("loss=" + pct(c.loss.p)); break;
        case LossKind::gilbert_elliott:
            add("gemodel=" + pct(c.loss.p) + "/" + pct(c.loss.r) + "/" + pct(c.loss.loss_bad) + "/" + pct(c.loss.loss_good));
            break;
        case LossKind::four_state:
            add("lossstate=" + pct(c.loss.p13) + "/" + pct(c.loss.p31) + "/" + pct(c.loss.p32) + "/" + pct(c.loss.p23) +
                "/" + pct(c.loss.p14));
            break;
    }
    if (c.duplicate > 0) add("duplicate=" + pct(c.duplicate));
    if (c.corrupt > 0) add("corrupt=" + pct(c.corrupt));
    auto secs = [](Duration d) { return fmt::format("{:g}s", static_cast<double>(d.count()) / 1e9); };
    for (const OutageConfig& o : c.outages) add("outage=" + secs(o.duration) + "@" + secs(o.start));
    if (c.trace.trace) {
        add(fmt::format("trace={}({:.2f}mbit mean)", c.trace.trace->name(),
                        c.trace.trace->mean_rate_bps(c.trace.opportunity_bytes) / 1e6));
    }
    if (c.queue.rate_bps > 0) {
        add(fmt::format("rate={:g}mbit", c.queue.rate_bps / 1e6));
        if (c.queue.overhead != 0) add("overhead=" + std::to_string(c.queue.overhead));
    }
    if (c.queue.rate_bps > 0 || c.trace.trace) {
        std::string q = "queue=";
        if (c.queue.packets) q += std::to_string(c.queue.packets) + "pkt";
        // A trace's packet bound counts MTU-sized packets (src/emu/rate_queue.hpp).
        if (c.queue.packets && c.trace.trace) q += "(" + std::to_string(c.trace.opportunity_bytes) + "b each)";
        if (c.queue.bytes) q += (c.queue.packets ? "/" : "") + std::to_string(c.queue.bytes) + "b";
        add(q);
        if (c.queue.discipline == QueueDiscipline::codel)
            add("aqm=codel(target=" + ms(c.queue.codel_target) + ",interval=" + ms(c.queue.codel_interval) + ")");
        if (c.queue.ecn == EcnMarking::red)
            add(fmt::format("ecn=red({}-{}pkt,p={}{})", c.queue.red_min, c.queue.red_max, pct(c.queue.red_max_p),
                            c.queue.red_wq < 1 ? fmt::format(",wq={:g}", c.queue.red_wq) : ""));
        if (c.queue.ecn == EcnMarking::codel) add("ecn=codel");
        if (c.queue.ecn == EcnMarking::step)
            add("ecn=step(" + ms(c.queue.ecn_step) + (c.queue.ecn_step_ect1_only ? ",ect1" : "") + ")");
    }
    if (c.ecn_bleach) add("ecn=bleach");
    return out.empty() ? "none" : out;
}

std::string format_stats(const EmuStats& s) {
    auto ms = [](Duration d) {
        return fmt::format("{:.3f}", static_cast<double>(d.count()) / 1e6);
    };
    std::string out = "sent " + std::to_string(s.sent) + ", delivered " + std::to_string(s.delivered) + ", duplicated " +
                      std::to_string(s.duplicated) + ", corrupted " + std::to_string(s.corrupted) + ", reordered " +
                      std::to_string(s.reordered) + "\ndropped " + std::to_string(s.total_dropped()) + ":";
    for (std::size_t r = 0; r < kDropReasons; ++r)
        out += std::string(" ") + to_string(static_cast<DropReason>(r)) + " " + std::to_string(s.dropped[r]);
    if (s.total_marked() > 0 || s.bleached > 0) {
        out += "\nCE-marked " + std::to_string(s.total_marked()) + ":";
        for (std::size_t r = 0; r < kMarkReasons; ++r)
            out += std::string(" ") + to_string(static_cast<MarkReason>(r)) + " " + std::to_string(s.marked[r]);
        out += ", ECN cleared " + std::to_string(s.bleached);
    }
    for (const auto& [name, h] : {std::pair<const char*, const Histogram*>{"queue delay", &s.queue_delay},
                                  {"one-way delay", &s.one_way_delay}}) {
        out += std::string("\n") + name + " ms: n " + std::to_string(h->count());
        if (h->count())
            out += " min " + ms(h->min()) + " p50 " + ms(h->quantile(0.5)) + " p99 " + ms(h->quantile(0.99)) + " max " +
                   ms(h->max()) + " mean " + ms(h->mean());
    }
    return out;
}

}  // namespace ndm::emu
