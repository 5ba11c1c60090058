// The model's private side: the CRC the .ndmm format (include/ndm/ndm_model.hpp)
// ends with. The model type and its (de)serialisation are public.
#pragma once

#include <cstdint>
#include <span>

#include "cc/ndm/kernels.hpp"
#include "ndm/ndm_model.hpp"

namespace ndm::cc::ndm {

// CRC-32 (IEEE 802.3 polynomial, reflected, as zlib's crc32()).
std::uint32_t crc32(std::span<const std::uint8_t> bytes) noexcept;

}  // namespace ndm::cc::ndm
