// The latency spin bit of 1-RTT packets (RFC 9000 §17.4), which lets an
// on-path observer measure the round trip time: the server reflects the
// bit of the client's newest packet, the client sends its inverse, so the
// value seen in each direction flips once per round trip.
//
// §17.4's rules, as kept here: a participating endpoint starts with spin
// value 0 and, on a 1-RTT packet that raises the highest packet number it
// has received (only those: a reordered packet must not flip it back), sets
// it to that packet's bit (server) or its inverse (client). The value
// restarts at 0 when the connection ID in use changes (reset()). Even when
// allowed (ConnectionConfig::spin_bit), an endpoint must not participate on
// a random 1 in 16 connections or more, so that connections without the
// signal are common on the network; one that does not participate ignores
// the bits it receives and sends a random bit, here drawn per packet (the
// RFC's recommendation: per packet or per connection ID).
#pragma once

#include <cstdint>

#include "util/rng.hpp"

namespace ndm::transport {

class SpinBit {
public:
    // One connection in kDisabledOneIn does not participate even when allowed.
    static constexpr std::uint64_t kDisabledOneIn = 16;

    // seed: secret to the peer (a real connection's random source; the
    // simulator's seed, for reproducible runs); it decides participation
    // and draws the random bits of a connection that does not participate.
    SpinBit(bool client, bool allowed, std::uint64_t seed)
        : rng_(seed), client_(client), participates_(allowed && util::splitmix64(seed) % kDisabledOneIn != 0) {}

    [[nodiscard]] bool participates() const { return participates_; }

    // The bit of the next 1-RTT packet this side sends.
    bool next() { return participates_ ? value_ : (rng_.next() >> 63) != 0; }

    // A 1-RTT packet was received with this spin bit; newest: its packet
    // number is the highest received so far.
    void on_received(bool bit, bool newest) {
        if (participates_ && newest) value_ = client_ ? !bit : bit;
    }

    // The connection ID in use on the path changed (§17.4: the value restarts at 0).
    void reset() { value_ = false; }

private:
    util::Xoshiro256 rng_;
    bool client_;
    bool participates_;
    bool value_ = false;
};

}  // namespace ndm::transport
