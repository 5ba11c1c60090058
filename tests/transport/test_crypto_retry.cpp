// The Retry Integrity Tag (src/crypto/retry, RFC 9001 §5.8) on the Retry
// packet of Appendix A.4; a changed byte, another ODCID or a cut packet fail.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "crypto/retry.hpp"
#include "crypto_test_util.hpp"

using ndm::crypto::QuicVersion;

using ndm::test::hex;
using ndm::test::unhex;

namespace {
const std::vector<std::uint8_t>& kOdcid = ndm::test::rfc9001_dcid();
const std::vector<std::uint8_t> kRetry =
    unhex("ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f 0f2496ba");
}  // namespace

TEST_CASE("crypto retry: the integrity tag of the A.4 Retry packet (RFC 9001 A.4)") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        const std::vector<std::uint8_t> body(kRetry.begin(), kRetry.end() - 16);
        CHECK(hex(ndm::crypto::retry_integrity_tag(QuicVersion::v1, kOdcid, body)) == "04a265ba2eff4d829058fb3f0f2496ba");
        CHECK(ndm::crypto::verify_retry_integrity(QuicVersion::v1, kOdcid, kRetry));
    }
}

TEST_CASE("crypto retry: a changed byte, another original DCID or a short packet fails verification") {
    for (const auto backend : ndm::crypto::kBackends) {
        const ndm::test::BackendScope scope(backend);
        CAPTURE(scope.name);
        for (std::size_t i = 0; i < kRetry.size(); ++i) {
            auto bad = kRetry;
            bad[i] ^= 0x20;
            CHECK_FALSE(ndm::crypto::verify_retry_integrity(QuicVersion::v1, kOdcid, bad));
        }
        auto other = kOdcid;
        other[0] ^= 1;
        CHECK_FALSE(ndm::crypto::verify_retry_integrity(QuicVersion::v1, other, kRetry));
        CHECK_FALSE(ndm::crypto::verify_retry_integrity(QuicVersion::v1, {}, kRetry));
        for (std::size_t n = 0; n < kRetry.size(); ++n) {
            const std::vector<std::uint8_t> cut(kRetry.begin(), kRetry.begin() + static_cast<std::ptrdiff_t>(n));
            CHECK_FALSE(ndm::crypto::verify_retry_integrity(QuicVersion::v1, kOdcid, cut));
        }
        CHECK_FALSE(ndm::crypto::verify_retry_integrity(QuicVersion::v1, std::vector<std::uint8_t>(21, 0), kRetry));
        CHECK_THROWS_AS(ndm::crypto::retry_integrity_tag(QuicVersion::v1, std::vector<std::uint8_t>(21, 0), kRetry), std::invalid_argument);
    }
}
