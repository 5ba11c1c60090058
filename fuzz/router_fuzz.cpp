// libFuzzer target for the sans-I/O router (src/transport/router.hpp): a
// server's admission and routing of arbitrary datagrams from arbitrary
// addresses, with no socket; fuzz/router_harness.hpp says what it feeds and
// checks. (fuzz/endpoint_fuzz.cpp drives the same router through a real
// Endpoint on loopback.)
#include <cstddef>
#include <cstdint>

#include "router_harness.hpp"
#include "spdlog/spdlog.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const bool quiet = [] {
        spdlog::set_level(spdlog::level::off);
        return true;
    }();
    (void)quiet;
    ndm::fuzz::run_router_input(data, size);
    return 0;
}
