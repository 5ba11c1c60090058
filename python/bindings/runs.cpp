// The runs: ndm.simulate (one controller, one profile, virtual time),
// ndm.compare (ndm-compare --virtual) and ndm.compete (ndm-compare
// --compete), on the library's experiment API (ndm/experiment.hpp) that the
// tools use, so the numbers are the tools' numbers. Results are plain dicts;
// per-interval series are NumPy arrays.
#include <cstdio>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "ndm/cc.hpp"
#include "ndm/connection.hpp"
#include "ndm/experiment.hpp"

namespace ndm::python {

namespace {

template <typename T, typename R, typename F>
py::array_t<T> column(const std::vector<R>& rows, F&& f) {
    py::array_t<T> a(static_cast<py::ssize_t>(rows.size()));
    auto v = a.template mutable_unchecked<1>();
    for (std::size_t i = 0; i < rows.size(); ++i) v(static_cast<py::ssize_t>(i)) = static_cast<T>(f(rows[i]));
    return a;
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::size_t packet_size_arg(const py::handle& h) {
    if (py::isinstance<py::str>(h)) return experiment::packet_size_preset(h.cast<std::string>());
    const auto n = h.cast<long long>();
    if (n < static_cast<long long>(kMinDatagramSize) || n > static_cast<long long>(kMaxDatagramSize))
        throw std::invalid_argument("packet_size " + std::to_string(n) + " is outside " +
                                    std::to_string(kMinDatagramSize) + ".." + std::to_string(kMaxDatagramSize));
    return static_cast<std::size_t>(n);
}

// A bad name or option fails before anything runs, as in the tools.
void check_controller(const std::string& entry, std::size_t packet_size) {
    cc::Params p;
    p.max_datagram_size = packet_size;
    const cc::Entry e = cc::parse_entry(entry);
    try {
        (void)cc::make(e.name, p, e.options);
    } catch (const PythonCallbackFailed&) {  // a Python controller's constructor raised
        raise_kept_python_error();
    }
}

py::dict path_dict(const experiment::PathMetrics& p) {
    py::dict d;
    d["measured"] = p.measured;
    d["queue_delay_p95_ms"] = p.queue_delay_p95_ms;
    d["one_way_delay_p95_ms"] = p.one_way_delay_p95_ms;
    d["sent"] = p.sent;
    d["dropped_queue"] = p.dropped_queue;
    d["dropped_other"] = p.dropped_other;
    d["ce_marked"] = p.ce_marked;
    d["loss_rate"] = p.loss_rate();
    return d;
}

// One run's totals as ndm-compare's results.json has them per run.
py::dict run_dict(const experiment::RunResult& r) {
    py::dict d;
    d["controller"] = r.controller;
    d["repeat"] = r.repeat;
    d["seed"] = r.seed;
    d["sender_bytes"] = r.sender_bytes;
    d["sender_seconds"] = r.sender_seconds;
    d["sender_bitrate_bps"] = r.sender_bitrate();
    d["receiver_bytes"] = r.receiver_bytes;
    d["receiver_seconds"] = r.receiver_seconds;
    d["goodput_bps"] = r.goodput();
    d["drain_seconds"] = r.drain_seconds();
    d["retransmits"] = r.retransmits;
    d["packets_lost"] = r.packets_lost;
    d["spurious_losses"] = r.spurious_losses;
    d["ecn_state"] = r.ecn_state;
    d["ecn_ce_reported"] = r.ecn_ce_reported;
    d["byte_exact"] = r.byte_exact;
    d["error"] = r.error;
    d["path"] = path_dict(r.path);
    py::dict iv;
    using Row = experiment::IntervalRow;
    iv["begin_s"] = column<double>(r.intervals, [](const Row& x) { return x.begin_s; });
    iv["end_s"] = column<double>(r.intervals, [](const Row& x) { return x.end_s; });
    iv["bytes_sent"] = column<std::uint64_t>(r.intervals, [](const Row& x) { return x.bytes_sent; });
    iv["bytes_received"] = column<std::uint64_t>(r.intervals, [](const Row& x) { return x.bytes_received; });
    iv["retransmits"] = column<std::uint64_t>(r.intervals, [](const Row& x) { return x.retransmits; });
    iv["cwnd"] = column<std::uint64_t>(r.intervals, [](const Row& x) { return x.cwnd; });
    iv["srtt_ms"] = column<double>(r.intervals, [](const Row& x) { return x.srtt_ms; });
    d["intervals"] = iv;
    return d;
}

// Every sample of a transfer, the drain after the send phase included.
py::dict samples_dict(const std::vector<sim::IntervalSample>& s) {
    using S = sim::IntervalSample;
    py::dict d;
    d["begin_s"] = column<double>(s, [](const S& x) { return to_seconds(x.begin); });
    d["end_s"] = column<double>(s, [](const S& x) { return to_seconds(x.end); });
    d["bytes"] = column<std::uint64_t>(s, [](const S& x) { return x.bytes; });
    d["bytes_sent"] = column<std::uint64_t>(s, [](const S& x) { return x.bytes_sent; });
    d["retransmits"] = column<std::uint64_t>(s, [](const S& x) { return x.retransmits; });
    d["packets_lost"] = column<std::uint64_t>(s, [](const S& x) { return x.packets_lost; });
    d["cwnd"] = column<std::uint64_t>(s, [](const S& x) { return x.cwnd; });
    d["bytes_in_flight"] = column<std::uint64_t>(s, [](const S& x) { return x.bytes_in_flight; });
    d["srtt_ms"] = column<double>(s, [](const S& x) { return to_seconds(x.srtt) * 1e3; });
    return d;
}

}  // namespace

py::dict stats_dict(const ConnectionStats& s) {
    py::dict d;
    d["stream_bytes_sent"] = s.stream_bytes_sent;
    d["stream_bytes_retransmitted"] = s.stream_bytes_retransmitted;
    d["stream_bytes_acked"] = s.stream_bytes_acked;
    d["bytes_sent"] = s.bytes_sent;
    d["packets_sent"] = s.packets_sent;
    d["packets_lost"] = s.packets_lost;
    d["packets_retransmitted"] = s.packets_retransmitted;
    d["spurious_losses"] = s.spurious_losses;
    d["congestion_events"] = s.congestion_events;
    d["persistent_congestions"] = s.persistent_congestions;
    d["pto_count"] = s.pto_count;
    d["ecn_ce_reported"] = s.ecn_ce_reported;
    d["cwnd"] = s.cwnd;
    d["ssthresh"] = s.ssthresh;
    d["smoothed_rtt_ms"] = to_seconds(s.smoothed_rtt) * 1e3;
    d["min_rtt_ms"] = to_seconds(s.min_rtt) * 1e3;
    d["cc_state"] = s.cc_state;
    d["key_updates"] = s.key_updates;
    d["spin_bit"] = s.spin_bit;
    return d;
}

namespace {

// The arguments simulate and run_live share, checked, into a spec of either.
template <typename Spec>
ProfileArg single_run(Spec& spec, const py::object& profile, const std::string& cc, double duration,
                      std::uint64_t seed, const py::object& packet_size, double interval, double idle_timeout) {
    check_range("duration", duration, 0.1, 86400);
    check_range("interval", interval, 0.01, 60);
    check_range("idle_timeout", idle_timeout, 1, 86400);
    ProfileArg p = profile_arg(profile);
    spec.profile = p.profile;
    spec.cc = cc;
    spec.packet_size = packet_size_arg(packet_size);
    spec.seconds = duration;
    spec.interval = interval;
    spec.seed = seed;
    spec.idle_timeout_s = idle_timeout;
    check_controller(cc, spec.packet_size);
    return p;
}

py::dict simulate(const py::object& profile, const std::string& cc, double duration, std::uint64_t seed,
                  const py::object& packet_size, double interval, double idle_timeout) {
    experiment::VirtualRunSpec spec;
    const ProfileArg p = single_run(spec, profile, cc, duration, seed, packet_size, interval, idle_timeout);
    const experiment::VirtualRun run = run_without_gil([&] { return experiment::run_virtual(spec); });
    py::dict d = run_dict(run.result);
    d.attr("pop")("intervals");
    d["profile"] = p.text;
    d["packet_size"] = spec.packet_size;
    d["samples"] = samples_dict(run.transfer.samples);
    d["client_stats"] = stats_dict(run.transfer.client_stats);
    d["steps"] = run.transfer.steps;
    return d;
}

// One transfer over real UDP sockets on loopback, the profile's emulator on
// the client's socket path (ndm-compare without --virtual).
py::dict run_live(const py::object& profile, const std::string& cc, double duration, std::uint64_t seed,
                  const py::object& packet_size, double interval, double idle_timeout, const std::string& io) {
    experiment::LiveRunSpec spec;
    const ProfileArg p = single_run(spec, profile, cc, duration, seed, packet_size, interval, idle_timeout);
    spec.backend = parse_io_backend(io);
    const experiment::RunResult r = run_without_gil([&] { return experiment::run_live(spec); });
    py::dict d = run_dict(r);
    d["profile"] = p.text;
    d["packet_size"] = spec.packet_size;
    return d;
}

}  // namespace

void check_range(const char* name, double value, double lo, double hi) {
    if (!(value >= lo && value <= hi))  // NaN fails too
        throw std::invalid_argument(std::string(name) + " " + number(value) + " is outside " + number(lo) + ".." +
                                    number(hi));
}

namespace {

// "a,b,c" or a sequence of entries.
std::vector<std::string> controllers_arg(const py::handle& h) {
    std::vector<std::string> out;
    if (py::isinstance<py::str>(h)) {
        const auto text = h.cast<std::string>();
        for (std::size_t at = 0;;) {
            const auto comma = text.find(',', at);
            out.push_back(text.substr(at, comma - at));
            if (comma == std::string::npos) break;
            at = comma + 1;
        }
    } else {
        out = h.cast<std::vector<std::string>>();
    }
    if (out.empty()) throw std::invalid_argument("cc: no controller given");
    return out;
}

py::dict compare(const py::object& profile, const py::object& cc, double duration, unsigned repeat,
                 const py::object& packet_size, double interval, std::uint64_t seed, double idle_timeout) {
    // ndm-compare's bounds for -t, --repeat, -i and --idle-timeout.
    check_range("duration", duration, 0.5, 3600);
    check_range("repeat", repeat, 1, 1000);
    check_range("interval", interval, 0.1, 60);
    check_range("idle_timeout", idle_timeout, 1, 86400);
    const ProfileArg p = profile_arg(profile);
    const std::vector<std::string> controllers = controllers_arg(cc);
    experiment::VirtualRunSpec spec;
    spec.profile = p.profile;
    spec.packet_size = packet_size_arg(packet_size);
    spec.seconds = duration;
    spec.interval = interval;
    spec.idle_timeout_s = idle_timeout;
    for (const auto& c : controllers) check_controller(c, spec.packet_size);
    std::vector<experiment::RunResult> results;
    run_without_gil([&] {
        // Controllers of one repeat see the same emulator seed (common random
        // numbers); repeat k uses seed + k.
        for (unsigned rep = 0; rep < repeat; ++rep) {
            for (const auto& c : controllers) {
                spec.cc = c;
                spec.repeat = rep;
                spec.seed = seed + rep;
                results.push_back(experiment::run_virtual(spec).result);
            }
        }
    });
    py::list runs;
    for (const auto& r : results) runs.append(run_dict(r));
    py::dict d;
    d["profile"] = p.text;
    d["profile_description"] = "up: " + emu::describe(p.profile.up) + "; down: " + emu::describe(p.profile.down);
    d["packet_size"] = spec.packet_size;
    d["duration_s"] = duration;
    d["virtual_time"] = true;
    d["repeats"] = repeat;
    d["seed"] = seed;
    d["controllers"] = controllers;
    d["runs"] = runs;
    return d;
}

py::dict compete_run_dict(const experiment::CompeteRun& run) {
    py::list flows;
    for (const auto& f : run.flows) {
        py::dict fd;
        fd["controller"] = f.controller;
        fd["start_s"] = f.start_s;
        fd["goodput_bps"] = f.goodput_bps;
        fd["last_half_bps"] = f.last_half_bps;
        fd["retransmits"] = f.retransmits;
        fd["byte_exact"] = f.byte_exact;
        fd["error"] = f.error;
        fd["interval_bps"] = py::array_t<double>(static_cast<py::ssize_t>(f.interval_bps.size()), f.interval_bps.data());
        flows.append(fd);
    }
    py::dict d;
    d["seed"] = run.seed;
    d["interval_s"] = run.interval_s;
    d["jain_last_half"] = run.jain_last_half;
    d["bottleneck"] = path_dict(run.path);
    d["flows"] = flows;
    return d;
}

py::dict compete(const py::object& profile, const py::object& cc, double duration, double stagger, double interval,
                 const py::object& packet_size, std::uint64_t seed, unsigned repeat, double idle_timeout) {
    check_range("duration", duration, 0.5, 3600);
    check_range("stagger", stagger, 0, 3600);
    check_range("repeat", repeat, 1, 1000);
    check_range("interval", interval, 0.1, 60);
    check_range("idle_timeout", idle_timeout, 1, 86400);
    experiment::CompeteSpec spec;
    spec.profile = profile_arg(profile).text;
    spec.controllers = controllers_arg(cc);
    spec.seconds = duration;
    spec.stagger_s = stagger;
    spec.interval_s = interval;
    spec.packet_size = packet_size_arg(packet_size);
    spec.idle_timeout_s = idle_timeout;
    for (const auto& c : spec.controllers) check_controller(c, spec.packet_size);
    std::vector<experiment::CompeteRun> results;
    run_without_gil([&] {
        for (unsigned rep = 0; rep < repeat; ++rep) results.push_back(experiment::run_compete(spec, seed + rep));
    });
    py::list runs;
    for (const auto& r : results) runs.append(compete_run_dict(r));
    py::dict d;
    d["mode"] = "compete";
    d["profile"] = spec.profile;
    d["packet_size"] = spec.packet_size;
    d["duration_s"] = duration;
    d["stagger_s"] = stagger;
    d["interval_s"] = interval;
    d["controllers"] = spec.controllers;
    d["runs"] = runs;
    return d;
}

}  // namespace

void bind_runs(py::module_& m) {
    m.def("simulate", &simulate, py::kw_only(), py::arg("profile") = "urban-lte", py::arg("cc") = "cubic",
          py::arg("duration") = 10.0, py::arg("seed") = 1, py::arg("packet_size") = py::int_(1452),
          py::arg("interval") = 1.0, py::arg("idle_timeout") = 120.0,
          "One timed bulk transfer through an emulator profile in virtual time (as one controller of "
          "ndm-compare --virtual). Returns a dict: the run's totals, the path metrics, the sender's "
          "statistics and 'samples', a dict of NumPy arrays with one entry per interval (the drain after "
          "the send phase included). packet_size: bytes, or 'seed' / 'realistic'. Raises ValueError on "
          "bad input with the tools' message.");
    m.def("run_live", &run_live, py::kw_only(), py::arg("profile") = "urban-lte", py::arg("cc") = "cubic",
          py::arg("duration") = 10.0, py::arg("seed") = 1, py::arg("packet_size") = py::int_(1452),
          py::arg("interval") = 1.0, py::arg("idle_timeout") = 120.0, py::arg("io") = "auto",
          "One timed bulk transfer over real UDP sockets on loopback (ndm-compare without --virtual): a "
          "server endpoint on a thread of its own, the client with the profile's emulator on its socket path, "
          "QUIC with TLS 1.3 in between. Python controllers run here too (each call takes the GIL). Takes "
          "wall-clock time and the numbers vary with the machine's load. Returns simulate's totals and "
          "'intervals' (the send phase, NumPy arrays). io: 'auto', 'uring' or 'epoll'.");
    m.def("compare", &compare, py::kw_only(), py::arg("profile") = "urban-lte",
          py::arg("cc") = std::vector<std::string>{"ndm-lkm", "cubic", "reno"}, py::arg("duration") = 10.0,
          py::arg("repeat") = 1, py::arg("packet_size") = py::str("seed"), py::arg("interval") = 1.0,
          py::arg("seed") = 1, py::arg("idle_timeout") = 120.0,
          "ndm-compare --virtual: the controllers in turn under one profile, `repeat` times (repeat k with "
          "seed + k, the same for every controller). Returns a dict: the experiment's parameters and 'runs', "
          "one per repeat and controller in the order they ran, with the numbers results.json holds for "
          "each run; each run's interval table ('intervals') is a dict of NumPy arrays.");
    m.def("compete", &compete, py::kw_only(), py::arg("profile") = "urban-lte",
          py::arg("cc") = std::vector<std::string>{"ndm-lkm", "cubic", "reno"}, py::arg("duration") = 10.0,
          py::arg("stagger") = 0.0, py::arg("interval") = 1.0, py::arg("packet_size") = py::str("seed"),
          py::arg("seed") = 1, py::arg("repeat") = 1, py::arg("idle_timeout") = 120.0,
          "ndm-compare --compete: the controllers at the same time, one flow each, sharing the profile's "
          "sender → receiver bottleneck; flow k starts k·stagger seconds after the first. Returns the "
          "content of its compete.json as a dict.");
}

}  // namespace ndm::python
