// The Endpoint: hands each received datagram to the sans-I/O router
// (src/transport/router.hpp: the connection-ID and address maps, admission,
// Retry, Version Negotiation, stateless reset) and does what it decides,
// drives the connections' timers and the service loop, runs the optional impairment Links, and turns connection
// events into callbacks. What they send goes to a TransmitBatch, which may
// span connections (transmit_batch.hpp): consecutive datagrams to one
// destination with one ECN codepoint share a GSO send while they keep its
// rule (one size, a shorter last, at most 64 and 65507 bytes), whoever wrote
// them (ndm-send -P's connections share one peer address); a change of
// destination, a datagram off the rule and the end of each pass over the
// connections with work end it. Bursts are the pacer's to bound: a connection
// adds only what its pacer released (RFC 9002 §7.7), at most kMaxTurnBursts
// send quanta a turn. Beside it: receive_budget.cpp (the receive budget),
// endpoint_config.cpp (EndpointConfig's names, host checks, the backend
// choice) and blocking_stream.cpp (the blocking facade).
#include "ndm/endpoint.hpp"
#include "ndm/qlog.hpp"

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <unordered_map>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "crypto/random.hpp"
#include "io/backend.hpp"
#include "io/receive_budget.hpp"
#include "io/transmit_batch.hpp"
#include "transport/router.hpp"
#include "util/rng.hpp"
#include "util/timer_heap.hpp"

namespace ndm {

namespace {

constexpr std::size_t kClosedInfoKept = 4096;
constexpr std::size_t kAcceptQueueMax = 4096;
constexpr unsigned kMaxTurnBursts = 8;  // pacer quanta one connection may send per turn

transport::RetryMode retry_mode(RetryPolicy p) {
    switch (p) {
        case RetryPolicy::never: return transport::RetryMode::never;
        case RetryPolicy::always: return transport::RetryMode::always;
        case RetryPolicy::under_load: return transport::RetryMode::under_load;
    }
    return transport::RetryMode::under_load;
}

bool short_header(std::span<const std::uint8_t> d) { return !d.empty() && (d[0] & 0x80) == 0; }

}  // namespace

struct Endpoint::Impl final : io::RxHandler {
    struct Record {
        ConnectionHandle handle = 0;
        std::unique_ptr<Connection> conn;
        io::Address peer;  // in the socket's address family
        std::unique_ptr<Link> egress, ingress;
        std::optional<StreamId> peer_stream;
        std::deque<StreamAbort> aborts;  // the peer's RESET_STREAM / STOP_SENDING, newest last (Endpoint::stream_abort)
        bool dirty = false;
        bool turned = false;     // listed in `turned` (Endpoint::take_turned)
        bool abandoned = false;  // peer unreachable: remove without a closing period
        std::size_t timer_slot = util::kNoTimerSlot;  // in `timers`
        std::uint64_t receive_share = 0;  // the receive window cap last given to conn
        // The peer's addresses seen, each the connection's PathId (RFC 9000
        // §9): the first (id 0) from connect or accept, the rest as datagrams
        // arrive from them; at most kPathsKept, the oldest not in use forgotten.
        struct KnownPath {
            io::Address addr;
            PathId id;
        };
        std::vector<KnownPath> paths;
        std::uint64_t next_path = 1;
        std::uint64_t active_path = 0;  // the PathId::id `peer` is the address of
    };
    static constexpr std::size_t kPathsKept = 4;

    // Paths that differ only in the port share this (RFC 9000 §9.4).
    static std::uint64_t network_of(const io::Address& a) { return transport::PeerAddressHash{}(a.peer().host()); }

    // The PathId of `from` for r's connection (a new one for a new address).
    static PathId path_of(Record& r, const io::Address& from) {
        for (const auto& p : r.paths)
            if (p.addr == from) return p.id;
        if (r.paths.size() >= kPathsKept) {
            const auto old = std::ranges::find_if(r.paths, [&](const auto& p) { return p.id.id != r.active_path; });
            r.paths.erase(old);
        }
        r.paths.push_back({from, PathId{r.next_path++, network_of(from)}});
        return r.paths.back().id;
    }
    static const io::Address* address_of(const Record& r, PathId id) {
        for (const auto& p : r.paths)
            if (p.id.id == id.id) return &p.addr;
        return nullptr;
    }

    // After the connection read or timed: its peer may have moved (RFC 9000
    // §9.3; the router's address map follows), and IDs it issued or the
    // peer retired are routed or forgotten (§5.1).
    void follow_connection(Record& r) {
        const PathId active = r.conn->active_path();
        if (active.id != r.active_path) {
            if (const io::Address* a = address_of(r, active)) {
                spdlog::debug("ndm: connection {} now sends to {} (was {})", r.handle, a->to_string(), r.peer.to_string());
                r.peer = *a;
                router.set_peer(r.handle, a->peer());
            }
            r.active_path = active.id;
        }
        for (const auto& c : r.conn->take_connection_id_changes()) {
            if (c.added) router.add_cid(r.handle, c.cid);
            else router.remove_cid(r.handle, c.cid);
        }
    }

    EndpointConfig cfg;
    trace::ObserverFactory qlog;  // from cfg.qlog_dir
    std::unique_ptr<io::Backend> backend;
    EventHandler handler;
    std::unordered_map<ConnectionHandle, std::unique_ptr<Record>> conns;
    // The most connections held since memory was last given back (below).
    std::size_t conns_peak = 0;
    // Which connection each datagram is for, and which new ones to admit
    // (RFC 9000 §5.2); its handles are the connections' ConnectionHandles.
    transport::Router router;
    // The record the last datagram went to: a sender's datagrams come in runs
    // of one connection's, and with many connections the table's buckets are
    // not in the cache (the lookup was 1.5 % of ndm-recv's samples at -P 128).
    ConnectionHandle last_handle = 0;
    Record* last_record = nullptr;
    // A turn visits only connections with work, so its cost does not grow
    // with the number of idle ones: those marked (a datagram arrived, the
    // application reached them through connection(), an error) and those
    // whose timer or link delivery is due. Every live connection is in
    // `dirty` or in `timers`, keyed by its next_timeout() and its links'
    // next deliveries as they were after its last turn: any call that can
    // change them marks it, and its turn re-keys it.
    std::vector<Record*> dirty;
    util::TimerHeap<Record> timers;
    std::vector<ConnectionHandle> finished;  // closed or abandoned at their last turn: removed if still so
    std::vector<ConnectionHandle> turned;    // marked since the last take_turned(), each once
    bool turns_tracked = false;              // from the first take_turned() on (else `turned` would only grow)
    std::deque<ConnectionHandle> accepted;
    std::unordered_map<ConnectionHandle, CloseInfo> close_infos;
    std::deque<ConnectionHandle> close_order;
    std::uint64_t seed_state = 0;
    Instant next_deadline = kNever;
    bool service_needed = false;
    bool tx_blocked = false;
    std::optional<io::TransmitBatch> batch;  // over `backend`, set once it exists
    std::vector<std::uint8_t> scratch = std::vector<std::uint8_t>(kMaxDatagramSize);  // poll buffer: never resized
    Datagram link_out;  // Link::deliver replaces its contents
    std::optional<Instant> rx_now;
    EndpointStats st;
    io::ReceiveBudget budget;  // EndpointConfig::receive_budget, once the socket's size is known
    // Stateless answers (resets, Retries, Version Negotiation) waiting for the next service pass.
    std::vector<std::pair<io::Address, std::vector<std::uint8_t>>> stateless_to_send;

    transport::RouterConfig router_config() {
        transport::RouterConfig r;
        r.accept_connections = cfg.accept_connections;
        r.retry = retry_mode(cfg.retry);
        r.retry_threshold = cfg.retry_threshold;
        r.max_half_open = cfg.max_half_open;
        r.max_connections_per_host = cfg.max_connections_per_address;
        r.stateless_reset_key = cfg.stateless_reset_key;
        r.connection_config = [this] { return for_new_connection(cfg.connection); };
        return r;
    }

    explicit Impl(EndpointConfig c) : cfg(std::move(c)), router(router_config()) {
        if (!cfg.qlog_dir.empty()) {
            try {
                qlog = qlog::file_observer(cfg.qlog_dir);
            } catch (const std::runtime_error& e) {
                throw EndpointError(fmt::format("ndm: {}", e.what()));
            }
        }
        backend = io::open_backend(cfg);
        batch.emplace(*backend);
        budget = io::ReceiveBudget(cfg.receive_budget, backend->receive_buffer_bytes());
        std::random_device rd;
        seed_state = (std::uint64_t{rd()} << 32) ^ rd();
        spdlog::debug("ndm: endpoint on {} with the {} backend (gso={}, gro={})", backend->local_address().to_string(),
                      to_string(backend->kind()), backend->gso(), backend->gro());
    }

    ~Impl() override {
        // No application callbacks from a destructor: the objects the handler
        // refers to may already be gone.
        handler = nullptr;
        // Best effort: tell peers we are gone rather than leave them to time out.
        const Instant now = steady_now();
        for (auto& [h, r] : conns) {
            if (r->abandoned) continue;
            r->conn->close(static_cast<std::uint64_t>(CloseCode::no_error), "endpoint closed", now, false);
            mark(*r);
        }
        try {
            pump_all(now);
            backend->flush();
        } catch (...) {
        }
    }

    // ---- bookkeeping -------------------------------------------------------

    void mark(Record& r) {
        if (!r.dirty) {
            r.dirty = true;
            dirty.push_back(&r);
        }
        if (turns_tracked && !r.turned) {
            r.turned = true;
            turned.push_back(r.handle);
        }
        service_needed = true;
        next_deadline = Instant::min();
    }

    Record* find(ConnectionHandle h) const {
        auto it = conns.find(h);
        return it == conns.end() ? nullptr : it->second.get();
    }

    // The record of the connection the router registered as `handle`.
    Record& add(ConnectionHandle handle, std::unique_ptr<Connection> conn, const io::Address& peer) {
        auto rec = std::make_unique<Record>();
        rec->handle = handle;
        rec->conn = std::move(conn);
        rec->peer = peer;
        rec->paths.push_back({peer, PathId{0, network_of(peer)}});
        if (cfg.egress_link) rec->egress = cfg.egress_link();
        if (cfg.ingress_link) rec->ingress = cfg.ingress_link();
        Record& r = *rec;
        conns.emplace(r.handle, std::move(rec));
        conns_peak = std::max(conns_peak, conns.size());
        mark(r);
        return r;
    }

    // Once the connections have halved from a peak of many (a flood of
    // half-open ones evicted or timed out, a test's 128 ended), the freed
    // heap goes back to the system: glibc keeps freed memory for reuse,
    // and a server's resident size would stay at its flood's high-water
    // mark (docs/security.md: memory follows the bytes actually received).
    void give_back_memory() {
        constexpr std::size_t kMany = 64;
        if (conns_peak < kMany || conns.size() * 2 > conns_peak) return;
        ::malloc_trim(0);
        conns_peak = conns.size();
    }

    void remove(Record& r) {
        router.remove(r.handle);
        if (last_record == &r) last_record = nullptr;
        if (!close_infos.count(r.handle)) remember_close(r.handle, r.conn->close_info());
        timers.erase(r);
        conns.erase(r.handle);  // r is gone
        give_back_memory();
    }

    // The handshake completed or the connection closed: no longer in the router's half-open count.
    void leave_half_open(Record& r) { router.established(r.handle); }

    // Drops a half-open connection without a closing period, as an unreachable peer is.
    // (The router has already taken it out of its half-open count and counted it.)
    void evict(Record& r, const char* why, Instant now) {
        r.conn->close(static_cast<std::uint64_t>(CloseCode::connection_refused), why, now, false);
        r.abandoned = true;
        mark(r);
    }

    void remember_close(ConnectionHandle h, const CloseInfo& info) {
        if (close_infos.emplace(h, info).second) close_order.push_back(h);
        while (close_order.size() > kClosedInfoKept) {
            close_infos.erase(close_order.front());
            close_order.pop_front();
        }
    }

    // The budget follows the kernel's receive drops (ReceiveBudget::adapt).
    void adapt_receive_budget(Instant now) {
        if (budget.enabled() && budget.adapt(backend->receive_drops(), now)) ++st.receive_budget_cuts;
    }

    // Caps r's receive window at its share of the budget now (at each turn:
    // the window moves only when the connection writes MAX_DATA).
    void apply_receive_share(Record& r) {
        const std::uint64_t share = budget.share(conns.size());
        if (r.receive_share == share) return;
        r.conn->cap_receive_window(share);
        r.receive_share = share;
    }

    // The configuration a new connection starts with: its own seed, the
    // socket's random connection IDs and clocks, and its share of the
    // receive budget as its initial window.
    ConnectionConfig for_new_connection(ConnectionConfig c) {
        c.seed = util::splitmix64_next(seed_state);
        c.initial_max_data = std::min(c.initial_max_data, budget.share(conns.size() + 1));
        // On a socket connection IDs are unpredictable (RFC 9000 §21.9): a seeded
        // generator would give the next connection's away from one observed ID.
        if (!c.random_bytes) c.random_bytes = [](std::span<std::uint8_t> out) { crypto::CryptoRandom{}.fill(out); };
        if (!c.observer && qlog) c.observer = qlog;
        if (!c.stateless_reset_token) c.stateless_reset_token = router.reset_tokens();
        // The edge reads the clocks the core does not: certificates are
        // checked against the system time.
        if (c.tls.wall_time == std::chrono::system_clock::time_point{}) c.tls.wall_time = std::chrono::system_clock::now();
        return c;
    }

    // ---- receive path (called from Backend::wait) --------------------------

    Instant rx_time() {
        if (!rx_now) rx_now = steady_now();
        return *rx_now;
    }

    Record* record(ConnectionHandle h) {
        if (last_record && h == last_handle) return last_record;
        Record* r = find(h);
        if (r) {
            last_handle = h;
            last_record = r;
        }
        return r;
    }

    void on_datagram(std::span<const std::uint8_t> data, const io::Address& from, Ecn ecn) override {
        ++st.datagrams_received;
        const Instant now = rx_time();
        using Kind = transport::Router::Routed::Kind;
        auto routed = router.handle(now, from.peer(), data, ecn);
        switch (routed.kind) {
            case Kind::connection: {
                Record* found = record(routed.handle);
                if (!found) break;
                Record& r = *found;
                // The ingress link carries no address: a datagram from a new
                // one goes straight to the connection, which decides whether
                // the peer moved (then the link carries its datagrams again).
                if (r.ingress && from == r.peer) {
                    r.ingress->send({data, ecn}, now);
                    service_needed = true;
                    rekey(r);
                    next_deadline = std::min(next_deadline, timers.top_time());
                } else {
                    r.conn->on_datagram(data, now, ecn, path_of(r, from));
                    follow_connection(r);
                    mark(r);
                }
                return;
            }
            case Kind::accepted: {
                for (const auto& e : routed.evicted)
                    if (Record* old = find(e.handle)) evict(*old, e.why, now);
                add(routed.handle, std::move(routed.connection), from);
                spdlog::debug("ndm: accepted a connection from {}", from.to_string());
                return;
            }
            case Kind::respond:
                if (short_header(data)) ++st.unroutable;  // answered with a stateless reset
                stateless_to_send.emplace_back(from, std::move(routed.response));
                service_needed = true;
                return;
            case Kind::offer_reset:
                if (!offer_reset(routed.candidates, data, from, now)) ++st.unroutable;
                return;
            case Kind::drop: break;
        }
        using transport::RouteDrop;
        if (routed.kind == Kind::drop && routed.reason != RouteDrop::invalid_token &&
            routed.reason != RouteDrop::per_host_cap)
            ++st.unroutable;
    }

    // RFC 9000 §10.3.1: a short header no ID routes may be a peer's stateless
    // reset (its first bytes are random): the connections to that address
    // look for their peer's token in it. If none takes it, a server answers it
    // with a reset of its own. True when a connection took it as a reset.
    bool offer_reset(const std::vector<ConnectionHandle>& candidates, std::span<const std::uint8_t> data,
                     const io::Address& from, Instant now) {
        bool taken = false;
        for (const ConnectionHandle h : candidates) {
            Record* found = find(h);
            if (!found) continue;
            Record& r = *found;
            if (r.abandoned || r.conn->state() == ConnectionState::draining) continue;
            r.conn->on_datagram(data, now);
            if (r.conn->state() == ConnectionState::draining) {
                mark(r);
                taken = true;
            } else if (!r.dirty) {
                rekey(r);
            }
        }
        if (taken) return true;
        auto reset = router.reset(now, data);
        if (!reset.empty()) {
            stateless_to_send.emplace_back(from, std::move(reset));
            service_needed = true;
        }
        return false;
    }

    void on_peer_error(const io::Address& peer_in, int error, const std::string& what) override {
        ++st.icmp_errors;
        io::Address peer;
        if (!peer_in.convert_to(backend->local_address().family(), peer)) peer = peer_in;
        const Instant now = rx_time();
        for (const ConnectionHandle h : router.connections_to(peer.peer())) {
            Record* found = find(h);
            if (!found) continue;
            Record& r = *found;
            if (r.abandoned) continue;
            const auto s = r.conn->state();
            if (s != ConnectionState::handshaking && s != ConnectionState::established) continue;
            spdlog::debug("ndm: connection {} to {}: {} (errno {})", r.handle, peer.to_string(), what, error);
            r.conn->close(kClosePeerUnreachable, what, now, false);
            r.abandoned = true;
            mark(r);
        }
    }

    // ---- send path ---------------------------------------------------------

    void end_batch() { batch->flush(); }

    // Polls a connection's datagrams straight into send slots (no copy in the
    // common case). Returns false when it ran out of slots. The room asked
    // for is the connection's datagram size now (1200 bytes before the
    // handshake, then the negotiated one), not its configured limit: a
    // server allows 65507 and would otherwise end every batch at one
    // datagram.
    bool poll_into_slots(Record& r, Instant now) {
        const std::size_t room = r.conn->max_datagram_size();
        for (;;) {
            std::uint8_t* at = batch->reserve(r.peer, room);
            if (!at) return false;
            Ecn ecn = Ecn::not_ect;
            PathId path;
            const std::size_t n = r.conn->poll_datagram({at, room}, now, ecn, path);
            if (n == 0) return true;
            if (path.id != r.active_path) {
                if (!send_elsewhere(r, path, {at, n}, ecn)) return false;
                continue;
            }
            if (!batch->commit(n, ecn)) return false;
        }
    }

    // A datagram for another path than the peer's current address (a
    // PATH_CHALLENGE or PATH_RESPONSE, RFC 9000 §8.2): copied out of the
    // slot, sent on its own. False when it was stashed (no slot free).
    bool send_elsewhere(Record& r, PathId path, std::span<const std::uint8_t> d, Ecn ecn) {
        const io::Address* to = address_of(r, path);
        if (!to) return true;  // an address forgotten since: the probe is lost, as on the wire
        const io::Address dest = *to;
        const std::vector<std::uint8_t> copy(d.begin(), d.end());
        return batch->send_or_stash(dest, copy, ecn);
    }

    // One connection's turn: links, datagrams out, events to the application.
    void pump(Record& r, Instant now) {
        r.dirty = false;
        apply_receive_share(r);
        if (!r.abandoned) {
            if (r.egress) {
                Ecn ecn = Ecn::not_ect;
                PathId path;
                while (std::size_t n = r.conn->poll_datagram(scratch, now, ecn, path)) {
                    // The egress link carries no address: another path's probe goes around it.
                    if (path.id != r.active_path) send_elsewhere(r, path, {scratch.data(), n}, ecn);
                    else r.egress->send({{scratch.data(), n}, ecn}, now);
                }
            } else if (!tx_blocked) {
                // One pacer quantum per clock reading would cap a turn at 64 KiB
                // even when the pacing rate repays it within nanoseconds, long
                // before the batch is built: keep polling with a fresh clock
                // while the connection still sends, up to kMaxTurnBursts quanta,
                // so a turn's fixed costs (ring enter, ACK processing, an io-wq
                // wake-up) are spread over more data.
                for (unsigned burst = 0;; ++burst) {
                    const std::uint64_t before = batch->queued() + batch->pending();
                    if (!poll_into_slots(r, now)) {
                        tx_blocked = true;
                        mark(r);  // more to send once slots come back
                        break;
                    }
                    if (burst + 1 >= kMaxTurnBursts || batch->queued() + batch->pending() == before) break;
                    now = steady_now();
                }
            } else {
                mark(r);
            }
        }
        follow_connection(r);
        while (auto ev = r.conn->poll_event()) dispatch(r, *ev);
        ++st.connection_turns;
        // Everything that can move its timers has run (the handler may have
        // marked it again: then it has another turn, which re-keys it too).
        rekey(r);
        if (r.conn->is_closed() || r.abandoned) finished.push_back(r.handle);
    }

    void dispatch(Record& r, const Event& ev) {
        if (std::holds_alternative<event::Established>(ev)) {
            leave_half_open(r);
            if (!r.conn->is_client()) {
                accepted.push_back(r.handle);
                if (accepted.size() > kAcceptQueueMax) accepted.pop_front();
            }
        } else if (auto* so = std::get_if<event::StreamOpened>(&ev)) {
            if (!r.peer_stream) r.peer_stream = so->id;
        } else if (auto* rs = std::get_if<event::StreamReset>(&ev)) {
            note_abort(r, rs->id).reset_code = rs->error_code;
        } else if (auto* sp = std::get_if<event::StreamStopped>(&ev)) {
            note_abort(r, sp->id).stop_code = sp->error_code;
        } else if (auto* cl = std::get_if<event::Closed>(&ev)) {
            leave_half_open(r);
            remember_close(r.handle, cl->info);
        }
        if (handler) handler(r.handle, ev);  // may re-enter: connect, connection(), ...
    }

    // The record of a stream's aborts, made for its first; the oldest go
    // beyond kStreamAbortsKept.
    static StreamAbort& note_abort(Record& r, StreamId id) {
        for (StreamAbort& a : r.aborts)
            if (a.id == id) return a;
        if (r.aborts.size() == kStreamAbortsKept) r.aborts.pop_front();
        return r.aborts.emplace_back(StreamAbort{id, std::nullopt, std::nullopt});
    }

    // When the connection next has timed work: its own timers (ACK delay,
    // loss/PTO, idle, pacer) or its impairment links' next deliveries.
    Instant wake_time(const Record& r) const {
        Instant t = r.conn->next_timeout();
        if (r.egress) t = std::min(t, r.egress->next_delivery());
        if (r.ingress) t = std::min(t, r.ingress->next_delivery());
        return t;
    }

    void rekey(Record& r) { timers.set(r, wake_time(r)); }

    // Delivers what a connection's links release by now: egress to the
    // socket, ingress to the connection.
    void run_links(Record& r, Instant now) {
        if (r.egress) {
            while (r.egress->next_delivery() <= now && r.egress->deliver(now, link_out)) {
                if (!r.abandoned && !batch->send_or_stash(r.peer, link_out.bytes, link_out.ecn)) tx_blocked = true;
            }
        }
        if (r.ingress) {
            while (r.ingress->next_delivery() <= now && r.ingress->deliver(now, link_out)) {
                r.conn->on_datagram(link_out.bytes, now, link_out.ecn);
            }
        }
    }

    // The connections whose timers or link deliveries are due, from the top
    // of the heap: each runs its links and timers and gets a turn (which
    // puts it back in the heap).
    void run_due(Instant now) {
        for (Record* r = timers.top(); r && timers.top_time() <= now; r = timers.top()) {
            timers.erase(*r);
            run_links(*r, now);
            if (r->conn->next_timeout() <= now) r->conn->on_timeout(now);
            mark(*r);
        }
        end_batch();
    }

    // One pass over the connections with work; the batch they share (it may
    // span connections, as the opening comment says) ends with it.
    void pump_all(Instant now) {
        for (int round = 0; round < 4 && !dirty.empty(); ++round) {
            auto work = std::move(dirty);
            dirty.clear();
            for (Record* r : work) pump(*r, now);
        }
        end_batch();
    }

    // Connections that were closed or abandoned at their last turn, unless
    // marked since (their next turn lists them again).
    void remove_finished() {
        const auto done = std::move(finished);
        finished.clear();
        for (const ConnectionHandle h : done) {
            Record* r = find(h);
            if (r && !r->dirty && (r->conn->is_closed() || r->abandoned)) remove(*r);
        }
    }

    void service(Instant now) {
        service_needed = false;
        ++st.turns;
        adapt_receive_budget(now);
        tx_blocked = !batch->flush_stash();
        for (const auto& [to, d] : stateless_to_send)
            if (!batch->send_or_stash(to, d)) tx_blocked = true;
        stateless_to_send.clear();
        run_due(now);
        pump_all(now);
        remove_finished();
        next_deadline = timers.top_time();
        if (!dirty.empty() || !batch->stash_empty()) next_deadline = now;
        service_needed = false;
    }

    void rebind(std::uint16_t port) {
        if (cfg.accept_connections)
            throw EndpointError("ndm: rebind moves a client endpoint; this one accepts connections");
        const Instant now = steady_now();
        pump_all(now);
        backend->flush();
        EndpointConfig c = cfg;
        c.port = port;
        auto fresh = io::open_backend(c);  // throws, leaving the old socket in place
        batch.reset();
        backend = std::move(fresh);
        batch.emplace(*backend);
        spdlog::debug("ndm: endpoint moved to {}", backend->local_address().to_string());
        for (auto& [h, rp] : conns) {
            Record& r = *rp;
            if (r.abandoned) continue;
            // The same peer address, now a new path (same network: only this side's port changed).
            const PathId next{r.next_path++, network_of(r.peer)};
            if (!r.conn->migrate(next, now)) {
                mark(r);
                continue;  // its packets leave from the new port: to the server, a NAT rebinding
            }
            for (auto& p : r.paths)
                if (p.addr == r.peer) p.id = next;
            mark(r);
        }
    }

    void run_once(Instant deadline) {
        Instant now = steady_now();
        if (service_needed || next_deadline <= now) service(now);
        Instant wake = std::min(deadline, next_deadline);
        // Out of send slots: block for completions (they come within µs), not spin.
        if (tx_blocked) wake = std::min(deadline, now + std::chrono::milliseconds(1));
        rx_now.reset();
        backend->wait(wake, *this);
        tx_blocked = false;
        service(steady_now());
    }
};

// ---------------------------------------------------------------------------

Endpoint::Endpoint(EndpointConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Endpoint::~Endpoint() = default;

void Endpoint::on_event(EventHandler handler) { impl_->handler = std::move(handler); }

ConnectionHandle Endpoint::connect(const std::string& host, std::uint16_t port) {
    return connect(host, port, impl_->cfg.connection);
}

ConnectionHandle Endpoint::connect(const std::string& host, std::uint16_t port, const ConnectionConfig& config) {
    auto& d = *impl_;
    // A v4 socket reaches only IPv4 addresses; a v6 one (dual-stack) either.
    const int family = d.backend->local_address().family() == AF_INET ? AF_INET : AF_UNSPEC;
    const io::Address target = io::Address::resolve(host, port, family);
    io::Address peer;
    if (!target.convert_to(d.backend->local_address().family(), peer)) {
        throw EndpointError(fmt::format("ndm: cannot reach {} from a socket bound to {}", target.to_string(),
                                        d.backend->local_address().to_string()));
    }
    ConnectionConfig c = d.for_new_connection(config);
    // The name the certificate must carry is the one connected to, unless told otherwise.
    if (c.tls.server_name.empty())  // an IPv6 literal without its brackets (an IP address: no SNI, RFC 6066 §3)
        c.tls.server_name = host.size() >= 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
    auto conn = Connection::connect(c, steady_now());
    const ConnectionHandle handle = d.router.add(peer.peer(), conn->local_cid());
    auto& r = d.add(handle, std::move(conn), peer);
    spdlog::debug("ndm: connecting to {} (connection {})", peer.to_string(), r.handle);
    return r.handle;
}

Connection* Endpoint::connection(ConnectionHandle h) {
    auto* r = impl_->find(h);
    if (!r) return nullptr;
    impl_->mark(*r);
    return r->conn.get();
}

const Connection* Endpoint::find(ConnectionHandle h) const {
    auto* r = impl_->find(h);
    return r ? r->conn.get() : nullptr;
}

std::size_t Endpoint::connection_count() const { return impl_->conns.size(); }

std::vector<ConnectionHandle> Endpoint::take_turned() {
    impl_->turns_tracked = true;
    std::vector<ConnectionHandle> out;
    out.swap(impl_->turned);
    for (const ConnectionHandle h : out)
        if (auto* r = impl_->find(h)) r->turned = false;
    return out;
}

std::optional<ConnectionHandle> Endpoint::next_accepted() {
    auto& q = impl_->accepted;
    while (!q.empty()) {
        auto h = q.front();
        q.pop_front();
        if (impl_->find(h)) return h;
    }
    return std::nullopt;
}

const CloseInfo* Endpoint::close_info(ConnectionHandle h) const {
    auto it = impl_->close_infos.find(h);
    return it == impl_->close_infos.end() ? nullptr : &it->second;
}

std::optional<StreamId> Endpoint::peer_stream(ConnectionHandle h) const {
    auto* r = impl_->find(h);
    return r ? r->peer_stream : std::nullopt;
}

std::optional<StreamAbort> Endpoint::stream_abort(ConnectionHandle h, StreamId id) const {
    if (const auto* r = impl_->find(h))
        for (const StreamAbort& a : r->aborts)
            if (a.id == id) return a;
    return std::nullopt;
}

std::string Endpoint::peer_address(ConnectionHandle h) const {
    auto* r = impl_->find(h);
    return r ? r->peer.to_string() : std::string();
}

void Endpoint::run_once(Instant deadline) { impl_->run_once(deadline); }

bool Endpoint::run_until(const std::function<bool()>& pred, Duration timeout) {
    const Instant end = steady_now() + timeout;
    for (;;) {
        if (pred()) return true;
        if (steady_now() >= end) return pred();
        impl_->run_once(end);
    }
}

int Endpoint::fd() const { return impl_->backend->pollable_fd(); }
Instant Endpoint::next_deadline() const { return impl_->service_needed ? Instant::min() : impl_->next_deadline; }
void Endpoint::rebind(std::uint16_t port) { impl_->rebind(port); }
std::uint16_t Endpoint::local_port() const { return impl_->backend->local_address().port(); }
std::string Endpoint::local_address() const { return impl_->backend->local_address().to_string(); }
IoBackend Endpoint::backend() const { return impl_->backend->kind(); }
bool Endpoint::gso_enabled() const { return impl_->backend->gso(); }
bool Endpoint::gro_enabled() const { return impl_->backend->gro(); }

EndpointStats Endpoint::stats() const {
    EndpointStats s = impl_->st;
    const transport::RouterStats& rs = impl_->router.stats();
    s.per_address_refused = rs.drops(transport::RouteDrop::per_host_cap);
    s.invalid_tokens = rs.drops(transport::RouteDrop::invalid_token);
    s.retries_sent = rs.retries_sent;
    s.stateless_resets_sent = rs.stateless_resets_sent;
    s.half_open_evicted = rs.half_open_evicted;
    s.datagrams_sent = impl_->batch ? impl_->batch->queued() : 0;
    s.send_calls = impl_->backend->send_calls();
    s.send_errors = impl_->backend->send_errors();
    s.receive_drops = impl_->backend->receive_drops();
    s.receive_budget = impl_->budget.current();
    s.receive_budget_max = impl_->budget.ceiling();
    return s;
}

}  // namespace ndm
