#include "crypto/backend_choice.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "crypto/aead.hpp"
#include "crypto/error.hpp"
#include "crypto/header_protection.hpp"
#include "ndm/time.hpp"

namespace ndm::crypto {

namespace {

constexpr int kNoOverride = -1;
std::atomic<int> g_override{kNoOverride};

constexpr std::size_t kSuites = 3;
std::array<std::once_flag, kSuites> g_once;
std::array<BackendChoice, kSuites> g_choice;

std::optional<Backend> from_environment() {
    const char* value = std::getenv(kBackendEnvironment);
    if (value == nullptr || *value == '\0' || std::string_view(value) == "auto") return std::nullopt;
    if (const auto b = parse_backend(value)) return b;
    throw std::invalid_argument(std::string(kBackendEnvironment) + "=" + value +
                                ": expected gnutls, openssl or auto");
}

// One timed round: `packets` packets sealed, masked, unmasked and opened
// with one backend's keys, in nanoseconds; -1 if a packet failed to open.
double time_round(Aead& aead, const HeaderProtection& hp, std::vector<std::uint8_t>& packet, int packets) {
    constexpr std::size_t kHeader = 11;  // a short header: first byte, 8-byte DCID, 2-byte pn
    const Instant start = steady_now();  // ndm's one clock (src/util/clock.cpp)
    for (int i = 0; i < packets; ++i) {
        const auto pn = static_cast<std::uint64_t>(i);
        const auto header = std::span<const std::uint8_t>(packet).first(kHeader);
        const auto body = std::span(packet).subspan(kHeader);
        aead.seal(pn, header, body);
        const HpMask m1 = hp.mask(body.first<kHpSampleSize>());
        const HpMask m2 = hp.mask(body.first<kHpSampleSize>());
        packet[0] = static_cast<std::uint8_t>(packet[0] ^ m1[0] ^ m2[0]);  // applied and removed: unchanged
        if (!aead.open(pn, header, body)) return -1;
    }
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(steady_now() - start).count());
}

std::size_t index_of(CipherSuite suite) { return static_cast<std::size_t>(suite); }

BackendChoice choose(CipherSuite suite) {
    if (const auto env = from_environment()) {
        BackendChoice c;
        c.backend = *env;
        c.why = BackendChoice::Why::environment;
        return c;
    }
    BackendChoice c = measure_backends(suite);
    spdlog::debug("packet protection for {}: {}", to_string(suite), describe(c));
    return c;
}

}  // namespace

std::optional<Backend> backend_from_environment() { return from_environment(); }

BackendChoice measure_backends(CipherSuite suite, int rounds) {
    // A throwaway key: the cost does not depend on it.
    PacketKeys keys;
    keys.suite = suite;
    keys.key.fill(0x5a);
    keys.iv.fill(0xa5);
    keys.hp.fill(0x3c);
    struct Candidate {
        std::size_t index;
        Aead aead;
        HeaderProtection hp;
        double best = std::numeric_limits<double>::infinity();
    };
    std::vector<Candidate> candidates;
    candidates.reserve(kBackends.size());
    for (std::size_t i = 0; i < kBackends.size(); ++i) {
        try {
            candidates.push_back({i, Aead(kBackends[i], keys), HeaderProtection(kBackends[i], keys)});
        } catch (const CryptoError& e) {  // a library that refuses the suite (a FIPS-only OpenSSL) is left out
            spdlog::warn("packet protection for {}: {} is not usable ({})", to_string(suite), to_string(kBackends[i]),
                         e.what());
        }
    }
    if (candidates.empty()) throw CryptoError(std::string("no backend protects ") + std::string(to_string(suite)));
    std::vector<std::uint8_t> packet(kCalibrationPacket, 0x11);
    packet[0] = 0x41;
    // Calibrated: as many packets per round as make the first backend's round
    // last 200 us or more (at least 8, at most 4096), after a warm-up.
    int packets = 8;
    for (Candidate& c : candidates) time_round(c.aead, c.hp, packet, packets);
    while (packets < 4096 && time_round(candidates.front().aead, candidates.front().hp, packet, packets) < 200e3)
        packets *= 2;
    for (int r = 0; r < rounds; ++r) {
        for (Candidate& c : candidates) {
            const double ns = time_round(c.aead, c.hp, packet, packets);
            if (ns < 0) throw std::logic_error("packet protection calibration: a sealed packet did not open");
            c.best = std::min(c.best, ns / packets);
        }
    }
    BackendChoice choice;
    choice.why = BackendChoice::Why::measured;
    choice.ns_per_packet.fill(std::numeric_limits<double>::infinity());  // a backend left out
    choice.backend = kBackends[candidates.front().index];
    for (const Candidate& c : candidates) {
        choice.ns_per_packet[c.index] = c.best;
        if (c.best < choice.ns_per_packet[static_cast<std::size_t>(choice.backend)]) choice.backend = kBackends[c.index];
    }
    return choice;
}

BackendChoice backend_for(CipherSuite suite) {
    if (const int o = g_override.load(std::memory_order_relaxed); o != kNoOverride) {
        BackendChoice c;
        c.backend = static_cast<Backend>(o);
        c.why = BackendChoice::Why::override;
        return c;
    }
    const std::size_t i = index_of(suite);
    // An exception (a bad NDM_AEAD_BACKEND) leaves the flag unset: the next key asks again.
    std::call_once(g_once.at(i), [&] { g_choice[i] = choose(suite); });
    return g_choice[i];
}

void override_backend(std::optional<Backend> backend) {
    g_override.store(backend ? static_cast<int>(*backend) : kNoOverride, std::memory_order_relaxed);
}

std::string describe(const BackendChoice& choice) {
    std::string out = fmt::format("{} ({}", to_string(choice.backend), library_version(choice.backend));
    switch (choice.why) {
    case BackendChoice::Why::environment: out += fmt::format("; {}={}", kBackendEnvironment, to_string(choice.backend)); break;
    case BackendChoice::Why::override: out += "; chosen by the program"; break;
    case BackendChoice::Why::measured:
        out += "; measured";
        for (std::size_t i = 0; i < kBackends.size(); ++i)
            out += fmt::format("{}{} {:.2f}", i == 0 ? " " : ", ", to_string(kBackends[i]), choice.ns_per_packet[i] / 1e3);
        out += fmt::format(" us per {}-byte packet", kCalibrationPacket);
        break;
    }
    return out + ")";
}

}  // namespace ndm::crypto
