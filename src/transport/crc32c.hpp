// CRC32C (Castagnoli), the integrity check of every packet. Uses the SSE4.2
// crc32 instruction when the CPU has it (three interleaved streams joined with
// PCLMULQDQ for longer buffers), a table otherwise.
#pragma once

#include <cstdint>
#include <span>

namespace ndm::wire {

std::uint32_t crc32c(std::span<const std::uint8_t> data, std::uint32_t crc = 0);
// The portable table implementation, for tests and hosts without SSE4.2.
std::uint32_t crc32c_portable(std::span<const std::uint8_t> data, std::uint32_t crc = 0);

// Every implementation this CPU can run (portable first, the one crc32c()
// dispatches to last), so that tests can cross-check them and benchmarks
// compare them. All compute the same function with the same chaining rule.
struct Crc32cImpl {
    const char* name;
    std::uint32_t (*fn)(std::span<const std::uint8_t> data, std::uint32_t crc);
};
std::span<const Crc32cImpl> crc32c_implementations();

}  // namespace ndm::wire
