#include "tools/perf/cpu_meter.hpp"

#include <sys/resource.h>

#include <algorithm>

namespace ndm::tools {

namespace {
double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }
}  // namespace

void CpuMeter::start() {
    rusage r{};
    ::getrusage(RUSAGE_SELF, &r);
    user_s_ = seconds(r.ru_utime);
    system_s_ = seconds(r.ru_stime);
    wall_ = std::chrono::steady_clock::now();
}

CpuPercent CpuMeter::percent() const {
    rusage r{};
    ::getrusage(RUSAGE_SELF, &r);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    if (wall <= 0) return {};
    CpuPercent p;
    p.user = std::max(0.0, seconds(r.ru_utime) - user_s_) * 100 / wall;
    p.system = std::max(0.0, seconds(r.ru_stime) - system_s_) * 100 / wall;
    p.total = p.user + p.system;
    return p;
}

}  // namespace ndm::tools
