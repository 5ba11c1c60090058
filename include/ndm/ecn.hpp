// Explicit Congestion Notification codepoints (RFC 3168 §5): the two low bits
// of the IPv4 TOS byte and of the IPv6 Traffic Class. The numeric values are
// the wire's, so a codepoint converts to and from those bytes by masking.
#pragma once

#include <cstdint>
#include <string_view>

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

enum class Ecn : std::uint8_t {
    not_ect = 0b00,  // the transport does not support ECN (or did not mark)
    ect1 = 0b01,     // ECN-capable, L4S (RFC 9331)
    ect0 = 0b10,     // ECN-capable, classic (RFC 3168); what ndm marks
    ce = 0b11,       // Congestion Experienced: set by a router instead of dropping
};

// The codepoint in a TOS / Traffic Class byte, and a byte carrying one.
constexpr Ecn ecn_of_tos(unsigned tos) { return static_cast<Ecn>(tos & 0b11U); }
constexpr unsigned tos_with(unsigned tos, Ecn ecn) { return (tos & ~0b11U) | static_cast<unsigned>(ecn); }
// ECT(0), ECT(1) or CE: a packet whose sender said it understands ECN, which
// an AQM may mark CE rather than drop (RFC 3168 §5).
constexpr bool is_ect(Ecn e) { return e != Ecn::not_ect; }

constexpr std::string_view to_string(Ecn e) {
    switch (e) {
        case Ecn::not_ect: return "not-ect";
        case Ecn::ect1: return "ect1";
        case Ecn::ect0: return "ect0";
        case Ecn::ce: return "ce";
    }
    return "?";
}

// Where a connection's ECN validation stands (RFC 9000 §13.4.2, Appendix A.4).
enum class EcnState : std::uint8_t {
    disabled,  // ConnectionConfig::ecn is off: nothing is marked
    testing,   // the first packets are marked ECT(0) while the path is tested
    unknown,   // testing is over; no marking until an ACK validates the counts
    capable,   // the peer's counts validated: every packet is marked ECT(0)
    failed,    // the path or the peer mangles ECN: marking stopped for good
};

constexpr std::string_view to_string(EcnState s) {
    switch (s) {
        case EcnState::disabled: return "disabled";
        case EcnState::testing: return "testing";
        case EcnState::unknown: return "unknown";
        case EcnState::capable: return "capable";
        case EcnState::failed: return "failed";
    }
    return "?";
}

}  // namespace ndm

#pragma GCC visibility pop
