// Connection::Impl's connection IDs and paths (connection_impl.hpp): the IDs
// this side issues (NEW_CONNECTION_ID up to the peer's limit, RFC 9000
// §5.1.1; RETIRE_CONNECTION_ID range-checked, §19.16; LocalConnectionIds),
// path validation (PATH_CHALLENGE and PATH_RESPONSE in datagrams of their
// own, padded to 1200 bytes within the anti-amplification limit, §8.2,
// §8.2.1; PathSet), a server that follows its peer to a new address (§9.3:
// the new path validated, the old one kept to fall back to, §9.3.2; a fresh
// peer connection ID, §9.5; congestion state reset unless only the port
// changed, §9.4), and a client's migration to a new local socket (§9.2).
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/connection_impl.hpp"
#include "util/rng.hpp"

namespace ndm {

using namespace transport;

namespace {

// Less than this cannot carry a 1-RTT packet with a PATH frame.
constexpr std::uint64_t kMinProbeDatagram = 64;

// RFC 9000 §9.1: a packet of only these is a probe, not a migration.
bool probing_only(const std::vector<wire::Frame>& frames) {
    return std::ranges::all_of(frames, [](const wire::Frame& f) {
        return std::holds_alternative<wire::PathChallengeFrame>(f) ||
               std::holds_alternative<wire::PathResponseFrame>(f) ||
               std::holds_alternative<wire::NewConnectionIdFrame>(f) || std::holds_alternative<wire::PaddingFrame>(f);
    });
}

}  // namespace

// ---- connection IDs this side issues (RFC 9000 §5.1.1, §19.15, §19.16)

void Connection::Impl::issue_connection_ids() {
    if (!have_peer_params) return;
    local_cids.issue(
        peer_params.active_connection_id_limit, [this] { return new_local_cid(); },
        [this](std::span<const std::uint8_t> cid) {
            // RFC 9000 §10.3.2: the endpoint's key makes the token (the
            // Endpoint sets one); without it, an unpredictable one this side
            // never sends a reset with.
            if (cfg.stateless_reset_token) return cfg.stateless_reset_token(cid);
            wire::ResetToken t{};
            if (cfg.random_bytes) {
                cfg.random_bytes(t);
            } else {
                for (std::size_t i = 0; i < t.size(); i += 8) {
                    const std::uint64_t v = util::splitmix64_next(rng);
                    for (std::size_t j = 0; j < 8; ++j) t[i + j] = static_cast<std::uint8_t>(v >> (8 * j));
                }
            }
            return t;
        });
}

bool Connection::Impl::on_retire_connection_id(const wire::RetireConnectionIdFrame& f, Instant now) {
    if (auto err = local_cids.on_retire(f.sequence, rx_dcid)) {
        close_with_error(err->code, std::move(err->reason), now);
        return false;
    }
    issue_connection_ids();  // a replacement (§5.1.1)
    return true;
}

void Connection::Impl::on_new_peer_connection_id(const wire::NewConnectionIdFrame& f, Instant now) {
    if (auto err = peer_cids.on_new_connection_id(f)) {
        close_with_error(err->code, std::move(err->reason), now);
        return;
    }
    // Retire Prior To may have taken a path's ID: the active path takes
    // the lowest left, the others theirs when they next need one.
    Path& a = paths.active();
    if (a.peer_cid && !peer_cids.find(*a.peer_cid)) a.peer_cid = peer_cids.current_sequence();
    if (a.peer_cid) peer_cids.use(*a.peer_cid);
    for (Path* p : {paths.fallback(), paths.probe()})
        if (p && p->peer_cid && !peer_cids.find(*p->peer_cid)) p->peer_cid.reset();
    use_current_peer_cid();
}

// RFC 9000 §17.4: the spin bit restarts at 0 on another connection ID.
void Connection::Impl::use_current_peer_cid() {
    const wire::ConnectionId before = peer_cid;
    peer_cid = peer_cids.current();
    if (!(peer_cid == before)) spin.reset();
}

// ---- paths (RFC 9000 §8.2, §9)

Duration Connection::Impl::path_validation_timeout() const {
    // RFC 9000 §8.2.4: three times the larger of the current PTO and the
    // PTO of a new path (kInitialRtt).
    const Duration fresh = RttEstimator{}.pto_period(loss.max_ack_delay());
    return 3 * std::max(pto_period(), fresh);
}

bool Connection::Impl::accept_path(std::size_t datagram_size) {
    Path& active = paths.active();
    if (state != ConnectionState::established || rx_path.id == active.id.id) {
        if (rx_path.id == active.id.id) active.id.network = rx_path.network;
        rx_path = active.id;  // before the handshake completes there is one path
        return true;
    }
    if (Path* p = paths.find(rx_path)) {
        if (!p->validated) p->received += datagram_size;
        return true;
    }
    // RFC 9000 §9: a client takes packets only from the paths it knows; a
    // server that sent disable_active_migration drops them (no stateless reset).
    if (client || cfg.disable_active_migration) return false;
    rx_new_path_bytes = datagram_size;  // counted once a packet of it authenticates
    return true;
}

transport::Path& Connection::Impl::rx_path_record() {
    if (Path* p = paths.find(rx_path)) return *p;
    Path& p = paths.on_receive(rx_path);
    p.received = rx_new_path_bytes;
    return p;
}

void Connection::Impl::on_path_challenge(const wire::PathChallengeFrame& f) {
    rx_path_record().response = f.data;  // RFC 9000 §8.2.2: on the path it came on; the latest one
}

void Connection::Impl::on_path_response(const wire::PathResponseFrame& f, Instant now) {
    const auto id = paths.on_response(f.data);
    if (!id) {
        ++st.packets_dropped;  // RFC 9000 §8.2.3: data this side never sent validates nothing
        spdlog::debug("ndm: a PATH_RESPONSE that answers no PATH_CHALLENGE, ignored");
        return;
    }
    if (id->id == paths.active().id.id) {
        // The peer's new address (§9.3): no limit on it any more; the old path goes.
        address_validated = true;
        amplification_wait = false;
        if (Path* fb = paths.fallback()) {
            if (fb->peer_cid && fb->peer_cid != paths.active().peer_cid) peer_cids.retire_unused(*fb->peer_cid);
            paths.drop_fallback();
        }
        events.push_back(event::PathValidation{*id, true});
    } else if (Path* pr = paths.probe(); client && pr && pr->id.id == id->id) {
        // This side's migration (§9.2): the probed path becomes the one in use.
        const Path old = paths.promote_probe();
        adopt_active_path(old, now);
        if (old.peer_cid && old.peer_cid != paths.active().peer_cid) peer_cids.retire_unused(*old.peer_cid);
        events.push_back(event::PathValidation{*id, true});
    }
    spdlog::debug("ndm: path {} validated", id->id);
}

void Connection::Impl::after_packet_paths(bool newest, Instant now) {
    if (state != ConnectionState::established || rx_path.id == paths.active().id.id) return;
    rx_path_record();
    // RFC 9000 §9.3: the peer moved when its newest packet, not a probe,
    // comes from the new address (an older one may be reordered from before).
    if (client || !newest || probing_only(rx_frames)) return;
    on_peer_migrated(now);
}

void Connection::Impl::on_peer_migrated(Instant now) {
    Path& from = paths.active();
    from.peer_cid = peer_cids.current_sequence();
    const Path previous = from;
    Path& to = rx_path_record();
    // §9.5: a connection ID not used on another path, when the peer gave one.
    if (!to.peer_cid) {
        const std::vector<std::uint64_t> taken = paths.peer_cids_in_use();
        to.peer_cid = peer_cids.spare(taken);
    }
    paths.migrate_to(rx_path);
    adopt_active_path(previous, now);
    Path& a = paths.active();
    if (!a.validated) {
        // §9.3.1: the anti-amplification limit holds on the new path until it is validated.
        PathSet::start_validation(a, now, path_validation_timeout());
        address_validated = false;
        unvalidated_received = a.received;
        unvalidated_sent = a.sent;
        amplification_wait = false;
    }
    events.push_back(event::PeerMigrated{previous.id, a.id});
    spdlog::debug("ndm: the peer moved from path {} to path {}", previous.id.id, a.id.id);
}

// The active path changed (from `previous`): its peer connection ID, and
// congestion state from scratch where the network path may differ (§9.4:
// a change of the peer's port only, a NAT rebinding, keeps them; the
// packets still cross the same links, and a slow start would halve the
// throughput of a flow behind a NAT that rebinds every few seconds).
void Connection::Impl::adopt_active_path(const Path& previous, Instant now) {
    Path& a = paths.active();
    if (!a.peer_cid || !peer_cids.find(*a.peer_cid)) a.peer_cid = peer_cids.current_sequence();
    peer_cids.use(*a.peer_cid);
    use_current_peer_cid();
    if (previous.id.network != a.id.network) {
        loss.reset_rtt();
        if (last_now > cc_state_since) account_cc_state(now);
        make_controller(mds, now);
        cc_state_since = now;
    }
}

bool Connection::Impl::start_migration(PathId path, Instant now) {
    if (!client || state != ConnectionState::established || !handshake_confirmed) return false;
    if (have_peer_params && peer_params.disable_active_migration) return false;  // RFC 9000 §9, §18.2
    if (paths.find(path) || (paths.probe() && paths.probe()->validating())) return false;
    paths.active().peer_cid = peer_cids.current_sequence();
    const std::vector<std::uint64_t> taken = paths.peer_cids_in_use();
    const auto spare = peer_cids.spare(taken);
    if (!spare) return false;  // §9.5: never the same ID on two paths
    Path& p = paths.add_probe(path);
    p.peer_cid = *spare;
    PathSet::start_validation(p, now, path_validation_timeout());
    spdlog::debug("ndm: probing path {} for a migration", path.id);
    return true;
}

void Connection::Impl::on_path_timeout(Instant now) {
    Path& a = paths.active();
    if (a.validating() && now >= a.deadline) {
        // §9.3.2: the peer's new address did not answer; back to the last validated one.
        const Path failed = a;
        if (paths.fall_back()) {
            address_validated = true;
            amplification_wait = false;
            adopt_active_path(failed, now);
            if (failed.peer_cid && failed.peer_cid != paths.active().peer_cid) peer_cids.retire_unused(*failed.peer_cid);
            events.push_back(event::PathValidation{failed.id, false});
            spdlog::debug("ndm: path {} not validated; back on path {}", failed.id.id, paths.active().id.id);
        } else {
            close = {static_cast<std::uint64_t>(CloseCode::no_viable_path),
                     "the peer's new address did not answer path validation, and no validated path is left", false,
                     false};
            events.push_back(event::Closed{close});
            terminate();
            return;
        }
    }
    if (Path* p = paths.probe(); p && p->validating() && now >= p->deadline) {
        const PathId failed = p->id;
        if (p->peer_cid) peer_cids.retire_unused(*p->peer_cid);
        paths.drop_probe();
        if (client) events.push_back(event::PathValidation{failed, false});
    }
}

// One datagram of PATH_CHALLENGE and/or PATH_RESPONSE to `p`, padded to
// 1200 bytes as far as the path's anti-amplification limit allows (RFC
// 9000 §8.2.1, §8.2.2, §9.3.1). Recorded with loss recovery as neither in
// flight nor ack-eliciting: a probe lost on a dead path is no congestion
// signal on the live one, and its timers are the path's (§8.2.4).
// Returns 0 when nothing went (what was due is dropped or put off).
std::size_t Connection::Impl::write_path_probe(std::span<std::uint8_t> out, Path& p, Instant now) {
    const bool on_active = p.id.id == paths.active().id.id;
    std::uint64_t budget = std::numeric_limits<std::uint64_t>::max();
    if (on_active) budget = amplification_budget();
    else if (!client && !p.validated) budget = amplification_room(p.received, p.sent);
    std::optional<PathData> response;
    response.swap(p.response);
    if (budget < kMinProbeDatagram) {
        if (p.challenge_due <= now) p.challenge_due = now + pto_period();  // when more has arrived
        return 0;
    }
    const auto challenge = PathSet::take_challenge(p, now, pto_period(), [this] {
        PathData d{};
        if (cfg.random_bytes) {
            cfg.random_bytes(d);
        } else {
            const std::uint64_t v = util::splitmix64_next(rng);
            for (std::size_t j = 0; j < d.size(); ++j) d[j] = static_cast<std::uint8_t>(v >> (8 * j));
        }
        return d;
    });
    if (!challenge && !response) return 0;
    const std::span<std::uint8_t> datagram =
        out.first(static_cast<std::size_t>(std::min<std::uint64_t>({out.size(), mds, budget})));
    const PacketSpace space = PacketSpace::application;
    const std::uint64_t pn = loss.next_packet_number(space);
    const std::size_t pn_len = pn_length(space);
    // §9.5: the path's own peer connection ID.
    const wire::ConnectionId in_use = peer_cid;
    if (p.peer_cid)
        if (const wire::ConnectionId* c = peer_cids.find(*p.peer_cid)) peer_cid = *c;
    std::size_t overhead = 0;
    auto b = builder(datagram, 0, space, pn, pn_len, overhead);
    peer_cid = in_use;
    if (!b.ok()) return 0;
    wire::Writer w(b.payload_space());
    SentFrames sent_frames;
    if (obs) trace_frames.clear();
    FrameSink sink(w, sent_frames, obs ? &trace_frames : nullptr);
    if (challenge) sink.put(wire::PathChallengeFrame{*challenge});
    if (response) sink.put(wire::PathResponseFrame{*response});
    const std::size_t len = seal(b, space, w.position(), std::min(kMinDatagramSize, datagram.size()));
    if (len == 0) return 0;
    SentPacket sp;
    sp.pn = pn;
    sp.time_sent = now;
    sp.bytes = static_cast<std::uint32_t>(len);
    sp.ecn = Ecn::not_ect;
    loss.on_packet_sent(std::move(sp), space);
    ++st.packets_sent;
    st.bytes_sent += len;
    if (on_active) {
        if (!address_validated) unvalidated_sent += len;
    } else if (!p.validated) {
        p.sent += len;
    }
    trace_sent(wire::PacketType::one_rtt, pn, len, now);
    return len;
}

}  // namespace ndm
