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

// One direction of a path: a pure object with no clock of its own
// (docs/architecture.md). The caller passes the time in; the same object can
// sit between two connections in virtual time (ndm/sim.hpp) or on a real
// socket path (ndm/endpoint.hpp). The emulator (ndm/emu.hpp) implements it.
class Link {
public:
    virtual ~Link() = default;
    // Enqueues one datagram sent at `now`; the link may drop, duplicate,
    // corrupt or delay it. Calls must come with non-decreasing `now`.
    virtual void send(std::span<const std::uint8_t> datagram, Instant now) = 0;
    // When the next queued datagram is due, or kNever if nothing is queued.
    [[nodiscard]] virtual Instant next_delivery() const = 0;
    // Pops one datagram due at or before `now` into `out` (replacing its
    // contents); false if none is due.
    virtual bool deliver(Instant now, std::vector<std::uint8_t>& out) = 0;
    [[nodiscard]] virtual LinkStats stats() const = 0;

    // send() and deliver() with the datagram's ECN codepoint (the two ECN
    // bits of its IP header, ndm/ecn.hpp). A link that models ECN overrides
    // both and carries the codepoint through, marking CE where its AQM would
    // (the emulator); it implements the two-argument forms as not-ECT. These
    // defaults are a link that does not: the codepoint is lost on the way, as
    // on a path that clears the TOS byte, which ECN validation notices
    // (RFC 9000 §13.4.2) and answers by no longer marking.
    virtual void send(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) {
        (void)ecn;
        send(datagram, now);
    }
    virtual bool deliver(Instant now, std::vector<std::uint8_t>& out, Ecn& ecn) {
        ecn = Ecn::not_ect;
        return deliver(now, out);
    }
};

// Makes one fresh Link (one per connection and direction).
using LinkFactory = std::function<std::unique_ptr<Link>()>;

}  // namespace ndm

#pragma GCC visibility pop
