// Helpers for the emulator tests (tests/test_emu_*.cpp): drive one
// EmulatedLink in virtual time with a synthetic send schedule, as a driver
// would: deliveries due before a send are handed out first.
#pragma once

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ndm/emu.hpp"

namespace emu_test {

using namespace std::chrono_literals;
using ndm::Duration;
using ndm::Instant;

inline Instant at(Duration d) { return Instant{} + d; }

// The message parse_profile(spec) throws, or "(no error)".
inline std::string error_of(const std::string& spec) {
    try {
        (void)ndm::emu::parse_profile(spec);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(no error)";
}
inline double ms(Duration d) { return static_cast<double>(d.count()) / 1e6; }

struct Delivered {
    std::uint64_t index;  // from the payload's first 8 bytes
    Instant sent;
    Instant at;
    std::vector<std::uint8_t> data;
};

// Payload of packet i: its index (8 bytes, so at least 8), then a fixed pattern.
inline std::vector<std::uint8_t> payload(std::uint64_t i, std::size_t size) {
    std::vector<std::uint8_t> p(std::max<std::size_t>(size, 8));
    std::memcpy(p.data(), &i, 8);
    for (std::size_t k = 8; k < p.size(); ++k) p[k] = static_cast<std::uint8_t>((k * 7 + 3) & 0xff);
    return p;
}

inline void deliver_until(ndm::emu::EmulatedLink& link, Instant t, const std::vector<Instant>& sent_at,
                          std::vector<Delivered>& out, bool keep_data) {
    ndm::Datagram buf;
    for (Instant n = link.next_delivery(); n <= t; n = link.next_delivery()) {
        if (!link.deliver(n, buf)) continue;  // a lazy queue decision, nothing due yet
        std::uint64_t idx = 0;
        std::memcpy(&idx, buf.bytes.data(), 8);
        out.push_back({idx, idx < sent_at.size() ? sent_at[idx] : Instant{}, n,
                       keep_data ? buf.bytes : std::vector<std::uint8_t>{}});
    }
}

// Sends packet i (of `size` bytes) at times[i]; returns every delivery, in order.
inline std::vector<Delivered> drive(ndm::emu::EmulatedLink& link, const std::vector<Instant>& times,
                                    std::size_t size, bool keep_data = false) {
    std::vector<Delivered> out;
    out.reserve(times.size());
    std::vector<std::uint8_t> p = payload(0, size);
    for (std::size_t i = 0; i < times.size(); ++i) {
        deliver_until(link, times[i], times, out, keep_data);
        std::memcpy(p.data(), &i, 8);
        link.send({p}, times[i]);
    }
    deliver_until(link, ndm::kNever - 1ns, times, out, keep_data);
    return out;
}

// n sends `spacing` apart starting at `start`.
inline std::vector<Instant> cbr(std::size_t n, Duration spacing, Instant start = Instant{}) {
    std::vector<Instant> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i] = start + spacing * static_cast<std::int64_t>(i);
    return t;
}

inline ndm::emu::DirectionConfig config(const char* spec) { return ndm::emu::parse_profile(spec).up; }

}  // namespace emu_test
