// ndm::Connection, the public facade (include/ndm/connection.hpp): each call
// forwards to Connection::Impl, the private state (connection_impl.hpp), whose
// work is split by job: connection_lifecycle.cpp (construction, close,
// timers), connection_receive.cpp (packets and frames in),
// connection_tls.cpp (the handshake and its keys), connection_recovery.cpp
// (ACKs, ECN and losses into the controller's events), connection_send.cpp
// (packets out), connection_trace.cpp (qlog and statistics) and, through
// StreamSet, stream_set.cpp (streams and flow control). Sans-I/O throughout:
// the driver gives the time.
#include "ndm/connection.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "crypto/backend_choice.hpp"
#include "transport/connection_impl.hpp"

namespace ndm {

using namespace transport;

std::unique_ptr<Connection> Connection::connect(const ConnectionConfig& config, Instant now) {
    return Impl::connect(config, now, nullptr);
}

std::unique_ptr<Connection> Connection::accept(const ConnectionConfig& config,
                                               std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) {
    return Impl::accept(config, datagram, now, nullptr, nullptr, ecn);
}

std::unique_ptr<Connection> Connection::accept(const ConnectionConfig& config,
                                               std::span<const std::uint8_t> datagram, Instant now,
                                               const RetryValidation& retry, Ecn ecn) {
    return Impl::accept(config, datagram, now, nullptr, &retry, ecn);
}

Connection::Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Connection::~Connection() = default;

// ============================================================================
// Public API

void Connection::on_datagram(std::span<const std::uint8_t> datagram, Instant now) {
    on_datagram(datagram, now, Ecn::not_ect);
}
void Connection::on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn) {
    on_datagram(datagram, now, ecn, impl_->paths.active().id);
}
void Connection::on_datagram(std::span<const std::uint8_t> datagram, Instant now, Ecn ecn, PathId path) {
    impl_->last_now = now;
    impl_->on_datagram(datagram, now, ecn, path);
}
std::size_t Connection::poll_datagram(std::span<std::uint8_t> out, Instant now) {
    Ecn ecn = Ecn::not_ect;
    return poll_datagram(out, now, ecn);
}
std::size_t Connection::poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn) {
    PathId path;
    return poll_datagram(out, now, ecn, path);
}
std::size_t Connection::poll_datagram(std::span<std::uint8_t> out, Instant now, Ecn& ecn, PathId& path) {
    impl_->last_now = now;
    return impl_->poll_datagram(out, now, ecn, path);
}
PathId Connection::active_path() const { return impl_->paths.active().id; }
bool Connection::migrate(PathId path, Instant now) {
    impl_->last_now = now;
    return impl_->start_migration(path, now);
}
std::vector<Connection::ConnectionIdChange> Connection::take_connection_id_changes() {
    std::vector<ConnectionIdChange> out;
    for (const auto& c : impl_->local_cids.take_changes())
        out.push_back({std::vector<std::uint8_t>(c.cid.span().begin(), c.cid.span().end()), c.added});
    return out;
}
Instant Connection::next_timeout() const { return impl_->next_timeout(); }
void Connection::on_timeout(Instant now) {
    impl_->last_now = now;
    impl_->on_timeout(now);
}

std::optional<Event> Connection::poll_event() {
    if (impl_->events.empty()) return std::nullopt;
    Event e = std::move(impl_->events.front());
    impl_->events.pop_front();
    impl_->streams.on_event_delivered(e);  // a reset stream may go now that the application knows
    return e;
}

std::optional<StreamId> Connection::open_stream() {
    if (!impl_->can_write()) return std::nullopt;
    return impl_->streams.open();
}

std::optional<StreamId> Connection::open_uni_stream() {
    if (!impl_->can_write()) return std::nullopt;
    return impl_->streams.open(false);
}

std::size_t Connection::write(StreamId id, std::span<const std::uint8_t> data, bool fin) {
    StreamState* s = impl_->writable_stream(id);
    if (!s) return 0;
    std::size_t n = s->send.write(data);
    if (n < data.size()) s->writable_wanted = true;
    if (fin && n == data.size()) s->send.finish();
    return n;
}

std::span<std::uint8_t> Connection::prepare(StreamId id, std::size_t max) {
    StreamState* s = impl_->writable_stream(id);
    if (!s) return {};
    // Short for want of buffer space (not just where the ring wraps): the
    // application waits for StreamWritable, as after a partial write().
    if (s->send.capacity() < max) s->writable_wanted = true;
    return s->send.prepare(max);
}

void Connection::commit(StreamId id, std::size_t n, bool fin) {
    StreamState* s = impl_->writable_stream(id);
    if (!s) {
        if (n > 0) throw std::logic_error(fmt::format("stream {}: commit without a prepared buffer", id));
        return;
    }
    s->send.commit(n);
    if (fin) s->send.finish();
}

void Connection::set_send_coalescing(Duration max_hold) {
    impl_->coalescing.set_max_hold(std::max(max_hold, Duration::zero()));
}

bool Connection::set_stream_source(StreamId id, StreamSource source) {
    StreamState* s = impl_->writable_stream(id);
    return s != nullptr && s->send.set_source(std::move(source));
}

std::size_t Connection::generate(StreamId id, std::size_t n, bool fin) {
    StreamState* s = impl_->writable_stream(id);
    if (!s || !s->send.generated()) return 0;
    const std::size_t taken = s->send.generate(n);
    if (taken < n) s->writable_wanted = true;
    if (fin && taken == n) s->send.finish();
    return taken;
}

void Connection::finish(StreamId id) {
    if (!impl_->can_write()) return;
    impl_->streams.require(id).send.finish();
}

std::size_t Connection::read(StreamId id, std::span<std::uint8_t> out) {
    StreamState* s = impl_->streams.find(id);
    if (!s) return 0;
    s->readable_notified = false;
    const std::size_t n = s->recv.read(out);
    impl_->streams.on_consumed(id, n);
    return n;
}

bool Connection::set_stream_sink(StreamId id, StreamSink sink) { return impl_->streams.set_sink(id, std::move(sink)); }

std::span<const std::uint8_t> Connection::peek(StreamId id) {
    StreamState* s = impl_->streams.find(id);
    if (!s) return {};
    // Looked at, maybe not taken: more data must raise StreamReadable again.
    s->readable_notified = false;
    return s->recv.peek();
}

void Connection::consume(StreamId id, std::size_t n) {
    // A stream whose reading was stopped or reset has dropped the bytes a
    // peek() showed before: consuming them takes nothing (connection.hpp).
    if (impl_->streams.reading_abandoned(id)) return;
    StreamState* s = impl_->streams.find(id);
    if (!s) {
        if (n > 0) throw std::logic_error(fmt::format("stream {}: consume of bytes never peeked", id));
        return;
    }
    s->readable_notified = false;
    s->recv.consume(n);
    impl_->streams.on_consumed(id, n);
}

bool Connection::stream_finished(StreamId id) const { return impl_->streams.finished(id); }

std::size_t Connection::stream_readable(StreamId id) const {
    const StreamState* s = impl_->streams.find(id);
    return s ? s->recv.readable() : 0;
}
bool Connection::stream_send_acked(StreamId id) const { return impl_->streams.send_acked(id); }

std::size_t Connection::stream_send_capacity(StreamId id) const {
    const StreamState* s = impl_->streams.find(id);
    if (!s || !impl_->can_write()) return 0;
    return s->send.capacity();
}

std::uint64_t Connection::stream_send_limit(StreamId id) const {
    const StreamState* s = impl_->streams.find(id);
    if (!s || !impl_->can_write()) return 0;
    return impl_->streams.new_data_limit(*s);
}

namespace {
// Application error codes are varints (RFC 9000 §19.4, §19.5).
void check_application_code(std::uint64_t code) {
    if (code > wire::kVarintMax)
        throw std::invalid_argument(fmt::format("application error code {} exceeds 2^62-1", code));
}
}  // namespace

void Connection::reset_stream(StreamId id, std::uint64_t error_code) {
    check_application_code(error_code);
    if (!impl_->can_write()) return;
    impl_->streams.reset(id, error_code);
}

void Connection::stop_sending(StreamId id, std::uint64_t error_code) {
    check_application_code(error_code);
    if (!impl_->can_write()) return;
    impl_->streams.stop(id, error_code);
}

bool Connection::request_key_update() { return impl_->request_key_update(); }

void Connection::set_stream_priority(StreamId id, StreamPriority priority) {
    impl_->streams.set_priority(id, priority);
}

StreamPriority Connection::stream_priority(StreamId id) const {
    const StreamState* s = impl_->streams.find(id);
    return s ? StreamPriority{s->urgency, s->incremental} : StreamPriority{};
}

void Connection::set_receive_windows(std::uint64_t max_data, std::uint64_t max_stream_data, bool autotune) {
    if (max_data == 0 || max_stream_data == 0) throw std::invalid_argument("receive windows must be positive");
    impl_->streams.set_receive_windows(max_data, max_stream_data, autotune);
}

void Connection::cap_receive_window(std::uint64_t bytes) {
    if (bytes == 0) throw std::invalid_argument("a receive window cap must be positive");
    impl_->streams.cap_receive_window(bytes);
}

void Connection::set_congestion_control(const std::string& name, const std::string& options) {
    auto& d = *impl_;
    cc::Params p;
    p.max_datagram_size = d.mds;
    p.now = d.last_now;
    auto fresh = cc::make(name, p, options);  // throws before anything changes
    d.cfg.cc = name;
    d.cfg.cc_options = options;
    if (d.last_now > d.cc_state_since) d.account_cc_state(d.last_now);
    d.cc = std::move(fresh);
    d.cc_state_since = d.last_now;
    d.adopt_cc_state(d.last_now);
    d.update_pacer();
    d.trace_metrics(d.last_now);
}

void Connection::close(std::uint64_t code, std::string reason, Instant now, bool application) {
    impl_->start_close(code, std::move(reason), application, now);
}

ConnectionState Connection::state() const { return impl_->state; }
const CloseInfo& Connection::close_info() const { return impl_->close; }
bool Connection::is_client() const { return impl_->client; }
std::size_t Connection::max_datagram_size() const { return impl_->mds; }
std::span<const std::uint8_t> Connection::peer_application_params() const {
    return impl_->peer_params.application_params;
}
HandshakeSummary Connection::handshake_summary() const {
    HandshakeSummary h;
    if (!impl_->tls) return h;
    h.version = crypto::version_number(impl_->version);
    h.retry = impl_->retry_scid.has_value();
    h.alpn = impl_->tls->alpn();
    if (const auto suite = impl_->tls->suite()) {
        h.cipher_suite = std::string(crypto::to_string(*suite));
        crypto::BackendChoice choice = crypto::backend_for(*suite);
        if (impl_->one_rtt && impl_->one_rtt->backend() != choice.backend)  // keys made under an override
            choice = {impl_->one_rtt->backend(), crypto::BackendChoice::Why::override, {}};
        h.packet_protection = crypto::describe(choice);
    }
    if (impl_->have_peer_params) h.peer = wire::to_public(impl_->peer_params);
    h.resumed = impl_->tls->resumed();
    h.early_data = impl_->early_data_outcome();
    return h;
}
bool Connection::can_send_early_data() const {
    return impl_->state == ConnectionState::handshaking && impl_->sending_zero_rtt();
}
std::span<const std::uint8_t> Connection::local_cid() const { return impl_->local_cid.span(); }
std::span<const std::uint8_t> Connection::peer_cid() const { return impl_->peer_cid.span(); }

}  // namespace ndm
