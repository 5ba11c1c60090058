#include "transport/ecn_validator.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace ndm::transport {

void EcnValidator::on_packet_sent(Ecn ecn, PacketSpace s) {
    if (ecn != Ecn::ect0) return;
    ++spaces_[static_cast<std::size_t>(s)].ect0_sent;
    ++total_ect0_sent_;
    if (state_ != EcnState::testing) return;
    if (++testing_marked_ >= kTestingPackets) state_ = EcnState::unknown;
}

void EcnValidator::on_packet_lost(Ecn ecn) {
    // Only testing's packets are marked before validation succeeds, so a
    // marked loss before then is one of them.
    if (ecn != Ecn::ect0 || (state_ != EcnState::testing && state_ != EcnState::unknown)) return;
    // Lost while still testing does not fail yet: more marked packets follow.
    if (++testing_lost_ >= testing_marked_ && state_ == EcnState::unknown)
        fail("every packet marked ECT(0) while testing was lost");
}

// RFC 9000 §13.4.2.1. Every count is peer-supplied (up to 2^62 - 1 each, as
// decoded), compared and subtracted only where it cannot wrap.
std::optional<std::string> EcnValidator::check(const wire::EcnCounts& c, const Acked& acked,
                                               const Space& sp) const {
    const wire::EcnCounts& prev = sp.reported;
    if (c.ect0 < prev.ect0 || c.ect1 < prev.ect1 || c.ce < prev.ce)
        return fmt::format("ECN counts decreased: ECT(0) {} -> {}, ECT(1) {} -> {}, CE {} -> {}", prev.ect0, c.ect0,
                           prev.ect1, c.ect1, prev.ce, c.ce);
    // The codepoints ndm sends are ECT(0) only: a count beyond them is a
    // peer's invention or a path that rewrites ECT(0) to ECT(1).
    if (c.ect0 > sp.ect0_sent || c.ce > sp.ect0_sent - c.ect0 || c.ect1 > 0)
        return fmt::format("ECN counts ECT(0) {}, ECT(1) {}, CE {} exceed the {} packets sent ECT(0)", c.ect0, c.ect1,
                           c.ce, sp.ect0_sent);
    // Both at most ect0_sent in total now, so the sum cannot wrap.
    const std::uint64_t increase = (c.ect0 - prev.ect0) + (c.ce - prev.ce);
    if (increase < acked.ect0_packets)
        return fmt::format("ECT(0)+CE counts rose by {} for {} newly acknowledged ECT(0) packets (marks cleared "
                           "on the path?)",
                           increase, acked.ect0_packets);
    return std::nullopt;
}

std::uint64_t EcnValidator::on_ack(const std::optional<wire::EcnCounts>& counts, const Acked& acked,
                                   PacketSpace s) {
    if (state_ == EcnState::disabled || state_ == EcnState::failed) return 0;
    if (!counts) {
        if (acked.ect0_packets > 0) fail("an ACK frame without ECN counts acknowledged packets sent ECT(0)");
        return 0;
    }
    if (!acked.largest_is_new) return 0;
    Space& sp = spaces_[static_cast<std::size_t>(s)];
    if (auto why = check(*counts, acked, sp)) {
        fail(std::move(*why));
        return 0;
    }
    const std::uint64_t ce = counts->ce - sp.reported.ce;
    sp.reported = *counts;
    ce_reported_ += ce;
    if (acked.ect0_packets > 0 && (state_ == EcnState::testing || state_ == EcnState::unknown)) {
        state_ = EcnState::capable;
        spdlog::debug("ndm: ECN validated; marking every packet ECT(0)");
    }
    return ce;
}

void EcnValidator::fail(std::string why) {
    spdlog::debug("ndm: ECN validation failed, marking stops: {}", why);
    state_ = EcnState::failed;
    failure_ = std::move(why);
}

}  // namespace ndm::transport
