// Which backend protects a suite's packets (backend.hpp): chosen by
// measurement, once per suite and process. The first key of a suite runs a
// short calibrated micro-run of every backend, interleaved, on 1452-byte
// packets (seal, header protection mask, remove the mask, open) and keeps
// the fastest; later keys reuse the answer. NDM_AEAD_BACKEND=gnutls|openssl
// names one instead (auto, or unset, measures), and override_backend() does
// so for a process's tests. docs/packet-protection.md, "Backends".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "crypto/backend.hpp"
#include "crypto/suite.hpp"

namespace ndm::crypto {

inline constexpr const char* kBackendEnvironment = "NDM_AEAD_BACKEND";
inline constexpr std::size_t kCalibrationPacket = 1452;  // ndm's default datagram size

struct BackendChoice {
    Backend backend = Backend::gnutls;
    enum class Why : std::uint8_t { measured, environment, override } why = Why::measured;
    // With `measured`: each backend's best time per packet, nanoseconds, in
    // kBackends' order; infinity for a backend whose library refused the
    // suite's keys (it is left out, with a warning in the log).
    std::array<double, kBackends.size()> ns_per_packet{};
};

// The choice for `suite`, made at its first call and kept (thread-safe).
// Throws std::invalid_argument, naming the variable, if NDM_AEAD_BACKEND is
// neither gnutls, openssl, auto nor empty.
BackendChoice backend_for(CipherSuite suite);

// What the choice says in one line: "openssl (OpenSSL 3.0.19 27 Jan 2026;
// measured 0.71 vs gnutls 5.37 us per 1452-byte packet)", "gnutls (GnuTLS
// 3.7.9; NDM_AEAD_BACKEND=gnutls)".
std::string describe(const BackendChoice& choice);

// NDM_AEAD_BACKEND's backend; nullopt when unset, empty or auto. Throws
// std::invalid_argument ("NDM_AEAD_BACKEND=x: expected gnutls, openssl or
// auto") for anything else.
std::optional<Backend> backend_from_environment();

// Tests: every suite uses `backend` from now on (nullopt: the measured or
// environment choice again). Keys made before keep theirs.
void override_backend(std::optional<Backend> backend);

// The measurement alone (backend_for() runs it once per suite): `rounds`
// interleaved rounds per backend, each long enough to be timed; the best
// round of each.
BackendChoice measure_backends(CipherSuite suite, int rounds = 5);

}  // namespace ndm::crypto
