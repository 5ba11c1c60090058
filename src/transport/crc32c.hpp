// CRC32C (Castagnoli), the integrity check of every packet. Uses the SSE4.2
// crc32 instruction when the CPU has it, a table otherwise.
#pragma once

#include <cstdint>
#include <span>

namespace ndm::wire {

std::uint32_t crc32c(std::span<const std::uint8_t> data, std::uint32_t crc = 0);
// The portable table implementation, for tests and hosts without SSE4.2.
std::uint32_t crc32c_portable(std::span<const std::uint8_t> data, std::uint32_t crc = 0);

}  // namespace ndm::wire
