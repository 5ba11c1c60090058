// libFuzzer target for the Connection state machine in both roles: see
// fuzz/connection_harness.hpp for the input's operations and the invariants
// checked after each of them.
#include <cstddef>
#include <cstdint>

#include "connection_harness.hpp"
#include "spdlog/spdlog.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);  // a hostile peer makes the connection log: not what is measured
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ndm::fuzz::run_connection_input(data, size);
    return 0;
}
