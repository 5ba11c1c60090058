// Sender side of ECN (RFC 9000 §13.4.2, Appendix A.4): which codepoint the
// next datagram carries, and whether the ECN counts the peer reports in its
// ACK frames can be trusted. Marking starts with a testing period (the first
// kTestingPackets packets), then waits (unknown) for an ACK whose counts
// account for the marked packets it acknowledges (capable: every packet is
// marked from then on). A path that drops every marked packet, clears or
// rewrites the codepoint, or a peer whose counts are missing, decrease or
// exceed what was sent, fails validation: marking stops for good. Counts are
// kept per packet number space, as the peer keeps them (§13.4.1). The
// connection turns an increase of the validated CE count into a congestion
// event (RFC 9002 §7.1, Appendix B.7).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ndm/ecn.hpp"
#include "wire/frame.hpp"
#include "transport/packet_space.hpp"

namespace ndm::transport {

class EcnValidator {
public:
    // RFC 9000 §13.4.2 (A.4 suggests ten packets, or three PTOs).
    static constexpr std::uint64_t kTestingPackets = 10;

    // Disabled: never marks, ignores the peer's counts (EcnState::disabled).
    explicit EcnValidator(bool enabled) : state_(enabled ? EcnState::testing : EcnState::disabled) {}

    // The codepoint for the next datagram: ECT(0) while testing or capable.
    [[nodiscard]] Ecn codepoint() const {
        return state_ == EcnState::testing || state_ == EcnState::capable ? Ecn::ect0 : Ecn::not_ect;
    }
    // A packet of space s left with codepoint `ecn`. The testing period ends
    // once kTestingPackets were marked (a datagram's coalesced packets all
    // count, so it may end a packet or two late).
    void on_packet_sent(Ecn ecn, PacketSpace s);
    // A packet sent with codepoint `ecn` was declared lost: when every packet
    // marked during testing is lost, the path drops ECT packets (§13.4.2).
    void on_packet_lost(Ecn ecn);

    // What the ACK frame newly acknowledged: packets sent ECT(0), and whether
    // its Largest Acknowledged is new (§13.4.2.1: counts of a reordered ACK,
    // one that does not raise it, are not processed).
    struct Acked {
        std::uint64_t ect0_packets = 0;
        bool largest_is_new = false;
    };
    // Validates the counts of an ACK frame in space s (nullopt: type 0x02,
    // none). Returns the increase of the CE count to treat as congestion,
    // 0 if there is none or validation failed.
    std::uint64_t on_ack(const std::optional<wire::EcnCounts>& counts, const Acked& acked, PacketSpace s);

    [[nodiscard]] EcnState state() const { return state_; }
    // Why validation failed (empty unless failed): for logs and tests.
    [[nodiscard]] const std::string& failure() const { return failure_; }
    [[nodiscard]] std::uint64_t ect0_sent() const { return total_ect0_sent_; }
    // The validated CE count, summed over the spaces.
    [[nodiscard]] std::uint64_t ce_reported() const { return ce_reported_; }

private:
    struct Space {
        std::uint64_t ect0_sent = 0;
        wire::EcnCounts reported;  // from the last ACK whose counts validated
    };
    void fail(std::string why);
    [[nodiscard]] std::optional<std::string> check(const wire::EcnCounts& c, const Acked& acked,
                                                   const Space& sp) const;

    EcnState state_;
    std::array<Space, kPacketSpaces> spaces_{};
    std::uint64_t testing_marked_ = 0;
    std::uint64_t testing_lost_ = 0;
    std::uint64_t total_ect0_sent_ = 0;
    std::uint64_t ce_reported_ = 0;
    std::string failure_;
};

}  // namespace ndm::transport
