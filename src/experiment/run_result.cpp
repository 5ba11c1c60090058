// The results of an experiment run: the path metrics from the emulator's
// statistics and the rates derived from a run's totals.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "ndm/connection.hpp"
#include "ndm/experiment.hpp"

namespace ndm::experiment {

std::size_t packet_size_preset(std::string_view preset) {
    if (preset == "seed") return kMaxDatagramSize;
    if (preset == "realistic") return 1452;
    throw std::invalid_argument("unknown packet preset \"" + std::string(preset) + "\" (known: seed, realistic)");
}

PathMetrics path_metrics(const emu::EmuStats& s) {
    auto ms = [](Duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    PathMetrics m;
    m.measured = true;
    m.queue_delay_p95_ms = ms(s.queue_delay.quantile(0.95));
    m.one_way_delay_p95_ms = ms(s.one_way_delay.quantile(0.95));
    m.sent = s.sent;
    m.dropped_queue = s.drops(emu::DropReason::queue_overflow) + s.drops(emu::DropReason::aqm);
    m.dropped_other = s.total_dropped() - m.dropped_queue;
    m.ce_marked = s.total_marked();
    return m;
}

double drain_seconds(double sender_end_s, double receiver_end_s) { return std::max(0.0, receiver_end_s - sender_end_s); }

double RunResult::sender_bitrate() const { return sender_seconds > 0 ? sender_bytes * 8.0 / sender_seconds : 0; }
double RunResult::goodput() const { return receiver_seconds > 0 ? receiver_bytes * 8.0 / receiver_seconds : 0; }
double RunResult::drain_seconds() const { return experiment::drain_seconds(sender_seconds, receiver_seconds); }

}  // namespace ndm::experiment
