// The network paths of a connection (RFC 9000 §8.2, §9): the active one, the
// last validated one kept to fall back to while a new active path is being
// validated (§9.3.2), and one more being probed (a client's migration, §9.2,
// or a peer's probe from a new address, §9.1): at most three, whatever the
// peer sends. Each path knows whether it is validated, the bytes it received
// and sent while it was not (the anti-amplification limit, §8.1, §9.3.1),
// the PATH_CHALLENGE data it has outstanding (at most kMaxChallenges, sent a
// PTO apart, abandoned after the validation timeout, §8.2.4), the
// PATH_RESPONSE it owes the peer, and which of the peer's connection IDs
// packets on it carry (§9.5). Paths are the driver's numbers (ndm::PathId);
// this class holds no address and no clock.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ndm/connection.hpp"
#include "wire/frame.hpp"

namespace ndm::transport {

using PathData = std::array<std::uint8_t, wire::kPathDataSize>;

// PATH_CHALLENGE frames sent on one path before its validation is abandoned.
inline constexpr std::size_t kMaxChallenges = 3;

// RFC 9000 §8.1, §9.3.1: to an address not validated, at most three times
// the bytes received from it.
inline constexpr std::uint64_t kAmplificationFactor = 3;
inline std::uint64_t amplification_room(std::uint64_t received, std::uint64_t sent) {
    const std::uint64_t allowed = kAmplificationFactor * received;  // datagram bytes: no overflow
    return allowed > sent ? allowed - sent : 0;
}

struct Path {
    PathId id;
    bool validated = false;
    std::optional<std::uint64_t> peer_cid;  // sequence of the peer's ID used on it; none: the active one's
    std::uint64_t received = 0, sent = 0;   // while not validated (RFC 9000 §8.1)
    std::vector<PathData> challenges;       // sent, unanswered
    Instant challenge_due = kNever;         // the next PATH_CHALLENGE
    Instant deadline = kNever;              // validation abandoned (§8.2.4)
    std::optional<PathData> response;       // PATH_RESPONSE owed on this path (§8.2.2: the latest)

    [[nodiscard]] bool validating() const { return deadline != kNever; }
};

class PathSet {
public:
    enum class Slot : std::uint8_t { active, fallback, probe };

    explicit PathSet(PathId initial);

    [[nodiscard]] Path& active() { return active_; }
    [[nodiscard]] const Path& active() const { return active_; }
    [[nodiscard]] Path* fallback() { return fallback_ ? &*fallback_ : nullptr; }
    [[nodiscard]] Path* probe() { return probe_ ? &*probe_ : nullptr; }
    [[nodiscard]] Path* find(PathId id);  // by PathId::id
    void drop_fallback() { fallback_.reset(); }

    // The record of the path a datagram arrived on: a new path takes the
    // probe slot (a path probed before is forgotten).
    Path& on_receive(PathId id);
    // The client's own new path (Connection::migrate): the probe slot.
    Path& add_probe(PathId id);

    // Starts (or restarts) validation: a PATH_CHALLENGE is due now, again
    // every `period` up to kMaxChallenges, abandoned at now + timeout.
    static void start_validation(Path& p, Instant now, Duration timeout);
    // The data for a PATH_CHALLENGE due on `p` at `now`, drawn from
    // `random`, or nothing (none due, or kMaxChallenges sent).
    static std::optional<PathData> take_challenge(Path& p, Instant now, Duration period,
                                                  const std::function<PathData()>& random);

    // A PATH_RESPONSE's data: the path whose challenge it answers (which is
    // now validated), or nothing for data no path sent (a forged or stale
    // response: ignored, RFC 9000 §8.2.3).
    std::optional<PathId> on_response(const PathData& data);

    // The peer moved to `id` (RFC 9000 §9.3): it becomes active; the old
    // active path becomes the fallback if validated (else the fallback stays).
    void migrate_to(PathId id);
    // The probe became the active path (a client's validated migration); the
    // old active path is returned (its peer connection ID is to be retired).
    Path promote_probe();
    // Validation of the active path failed: the fallback becomes active again
    // (RFC 9000 §9.3.2). False when there is none.
    bool fall_back();
    void drop_probe() { probe_.reset(); }

    // The earliest PATH_CHALLENGE or validation deadline.
    [[nodiscard]] Instant next_timer() const;
    // A path (not the active one) that owes a datagram now: a challenge due or a response.
    [[nodiscard]] Path* wants_probe_datagram(Instant now);
    [[nodiscard]] bool any_response_pending() const;

    // Sequence numbers of the peer's connection IDs the paths use.
    [[nodiscard]] std::vector<std::uint64_t> peer_cids_in_use() const;

private:
    Path active_;
    std::optional<Path> fallback_, probe_;
};

}  // namespace ndm::transport
