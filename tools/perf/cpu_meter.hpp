// CPU utilisation of this process over a test, as iperf3's
// cpu_utilization_percent: user and system CPU time (getrusage) as a
// percentage of the wall-clock time since start(); above 100 when more than
// one core was busy.
#pragma once

#include <chrono>

namespace ndm::tools {

struct CpuPercent {
    double total = 0, user = 0, system = 0;
};

class CpuMeter {
public:
    CpuMeter() { start(); }
    void start();
    [[nodiscard]] CpuPercent percent() const;

private:
    std::chrono::steady_clock::time_point wall_{};
    double user_s_ = 0, system_s_ = 0;
};

}  // namespace ndm::tools
