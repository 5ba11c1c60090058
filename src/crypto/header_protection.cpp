#include "crypto/header_protection.hpp"

#include <stdexcept>
#include <string>

#include "crypto/backend_choice.hpp"

namespace ndm::crypto {

HeaderProtection::HeaderProtection(CipherSuite suite, std::span<const std::uint8_t> key)
    : HeaderProtection(backend_for(suite).backend, suite, key) {}

HeaderProtection::HeaderProtection(Backend backend, CipherSuite suite, std::span<const std::uint8_t> key)
    : suite_(suite), backend_(backend) {
    if (key.size() != key_size(suite)) {
        throw std::invalid_argument("header protection key of " + std::to_string(key.size()) + " bytes for " +
                                    std::string(to_string(suite)));
    }
    cipher_ = backend_ops(backend).make_hp(suite, key);
}

HeaderProtection::~HeaderProtection() = default;  // each backend wipes its own key schedule

HpMask HeaderProtection::mask(std::span<const std::uint8_t, kHpSampleSize> sample) const {
    if (!cipher_) throw std::logic_error("header protection on a moved-from context");
    return cipher_->mask(sample);
}

}  // namespace ndm::crypto
