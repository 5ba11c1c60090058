// libFuzzer target for the NDM model loader (ndm/ndm_model.hpp): any byte
// image is either rejected with std::invalid_argument or is a valid model
// whose serialisation is exactly the image (nothing ignored: no trailing
// bytes, no field the loader skips or clamps). The first input byte picks
// whether the rest is loaded as it is (odd: after its last four bytes are
// replaced by the right CRC-32, so that mutations reach the checks behind
// the checksum).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "cc/ndm/model.hpp"
#include "fuzz_check.hpp"

using namespace ndm::cc::ndm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    std::vector<std::uint8_t> image(data + 1, data + size);
    if ((data[0] & 1) && image.size() >= 4) {
        const std::uint32_t crc = crc32(std::span(image).first(image.size() - 4));
        for (int i = 0; i < 4; ++i) image[image.size() - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    }
    Model m;
    try {
        m = parse_model(image);
    } catch (const std::invalid_argument&) {
        return 0;
    }
    m.validate();  // accepted means valid: a throw here escapes and aborts
    const auto again = serialize_model(m);
    FUZZ_CHECK(again == image);
    return 0;
}
