// ndm::Link: one direction of a network path between two endpoints, the
// interface that the impairment models (ndm/emu.hpp, SimpleLink in
// ndm/sim.hpp) implement and that both drivers use: the virtual-time
// simulator (ndm/sim.hpp) and the real-socket Endpoint (ndm/endpoint.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "ndm/ecn.hpp"
#include "ndm/time.hpp"

// Exported from libndm.so; the library is built with -fvisibility=hidden (docs/library.md).
#pragma GCC visibility push(default)

namespace ndm {

// Every datagram a link accepted is counted once in `sent`; it then ends up
// delivered, dropped (with its reason) or still queued. Duplicates add to
// `duplicated` and are counted again when delivered or dropped.
struct LinkStats {
    std::uint64_t sent = 0;
    std::uint64_t delivered = 0;
    std::uint64_t dropped_random = 0;  // the loss model
    std::uint64_t dropped_queue = 0;   // droptail at the queue bound
    std::uint64_t dropped_outage = 0;  // sent during a blackhole window
    std::uint64_t duplicated = 0;
    std::uint64_t corrupted = 0;
    std::uint64_t reordered = 0;
    std::uint64_t ce_marked = 0;  // ECT datagrams an AQM marked CE instead of dropping (RFC 3168 §5)
};

// One datagram as it crosses a link: its bytes and the ECN codepoint of its
// IP header (the two ECN bits, ndm/ecn.hpp), one value as quinn-proto's
// Transmit is. DatagramView is what send() takes (the caller keeps the bytes);
// Datagram is what deliver() fills, reusing its buffer from one call to the next.
struct DatagramView {
    std::span<const std::uint8_t> bytes;
    Ecn ecn = Ecn::not_ect;
};

struct Datagram {
    std::vector<std::uint8_t> bytes;
    Ecn ecn = Ecn::not_ect;
    [[nodiscard]] DatagramView view() const { return {bytes, ecn}; }
};

// One direction of a path: a pure object with no clock of its own
// (docs/architecture.md). The caller passes the time in; the same object can
// sit between two connections in virtual time (ndm/sim.hpp) or on a real
// socket path (ndm/endpoint.hpp). The emulator (ndm/emu.hpp) implements it.
//
// The codepoint travels with the datagram. A link that models ECN carries it
// through and marks CE where its AQM would (the emulator); a link that does
// not clears it to not-ECT, as a path that clears the TOS byte does, which
// ECN validation notices (RFC 9000 §13.4.2) and answers by no longer marking.
class Link {
public:
    virtual ~Link() = default;
    // Enqueues one datagram sent at `now`; the link may drop, duplicate,
    // corrupt, mark or delay it. Calls must come with non-decreasing `now`.
    virtual void send(const DatagramView& datagram, Instant now) = 0;
    // When the next queued datagram is due, or kNever if nothing is queued.
    [[nodiscard]] virtual Instant next_delivery() const = 0;
    // Pops one datagram due at or before `now` into `out` (replacing its bytes
    // and codepoint); false if none is due.
    virtual bool deliver(Instant now, Datagram& out) = 0;
    [[nodiscard]] virtual LinkStats stats() const = 0;
};

// Makes one fresh Link (one per connection and direction).
using LinkFactory = std::function<std::unique_ptr<Link>()>;

}  // namespace ndm

#pragma GCC visibility pop
