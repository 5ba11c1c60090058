// libFuzzer target for the NDM model loader (ndm/ndm_model.hpp): any byte
// image is either rejected with std::invalid_argument or is a valid model
// whose serialisation is exactly the input (nothing ignored: no trailing
// bytes, no field the loader skips).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>

#include "fuzz_check.hpp"
#include "ndm/ndm_model.hpp"

using namespace ndm::cc::ndm;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::uint8_t> in(data, size);
    Model m;
    try {
        m = parse_model(in);
    } catch (const std::invalid_argument&) {
        return 0;
    }
    m.validate();  // accepted means valid: throwing here escapes and aborts
    const auto again = serialize_model(m);
    FUZZ_CHECK(again.size() == size && std::equal(again.begin(), again.end(), data));
    return 0;
}
