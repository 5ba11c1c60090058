// ndm::h3::Session: nghttp3 on an ndm::Connection (docs/h3.md). The
// connection's streams are read into nghttp3_conn_read_stream, and what
// nghttp3_conn_writev_stream has to send is written into them; a stream whose
// send buffer is full is blocked in nghttp3 until its StreamWritable event
// (nghttp3's block/unblock pair, which an ngtcp2 application drives from
// extend_max_stream_data). Connection::write copies, so the bytes it took are
// acknowledged to nghttp3 at once (add_ack_offset): the transport owns them
// from there, retransmissions included, and nghttp3 and the body's chunks let
// them go (acked_stream_data).
#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "h3/session_impl.hpp"

namespace ndm::h3 {
namespace {

constexpr std::size_t kBodyChunk = 64 * 1024;

nghttp3_nv nv(const std::string& name, const std::string& value) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP3_NV_FLAG_NONE};
}

// The response body, a chunk at a time, kept until acked_stream_data.
// A body that cannot make its bytes (Body::fill threw: a file that shrank)
// cannot be finished whole: the stream waits (WOULDBLOCK) and is reset once
// nghttp3 has returned (abort_pending, stream_abort.cpp).
nghttp3_ssize read_body(nghttp3_conn*, std::int64_t id, nghttp3_vec* vec, std::size_t veccnt, std::uint32_t* flags,
                        void* user, void*) {
    Session::Impl& m = *static_cast<Session::Impl*>(user);
    RequestStream* s = m.stream(id);
    if (!s || veccnt == 0) return NGHTTP3_ERR_CALLBACK_FAILURE;
    const Body& body = s->response.body;
    const std::uint64_t n = std::min<std::uint64_t>(kBodyChunk, body.size - s->body_offset);
    if (n > 0) {
        auto& chunk = s->chunks.emplace_back(n);
        try {
            body.fill(s->body_offset, chunk);
        } catch (const std::exception& e) {
            spdlog::warn("h3: the body of {} failed at byte {}: {}; the stream is reset with H3_INTERNAL_ERROR",
                         s->request.path, s->body_offset, e.what());
            s->chunks.pop_back();
            m.to_abort.push_back(id);
            return NGHTTP3_ERR_WOULDBLOCK;
        }
        s->body_offset += n;
        vec[0] = {chunk.data(), chunk.size()};
    }
    if (s->body_offset == body.size) *flags |= NGHTTP3_DATA_FLAG_EOF;
    return n > 0 ? 1 : 0;
}

}  // namespace

std::string error_name(std::uint64_t code) {
    static constexpr std::array<const char*, 17> names{
        "H3_NO_ERROR",           "H3_GENERAL_PROTOCOL_ERROR", "H3_INTERNAL_ERROR",     "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM", "H3_FRAME_UNEXPECTED",   "H3_FRAME_ERROR",        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",           "H3_SETTINGS_ERROR",         "H3_MISSING_SETTINGS",   "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",  "H3_REQUEST_INCOMPLETE",     "H3_MESSAGE_ERROR",      "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK"};
    if (code >= kNoError && code - kNoError < names.size()) return names[code - kNoError];
    if (code == 0x200) return "QPACK_DECOMPRESSION_FAILED";  // RFC 9204 §6
    if (code == 0x201) return "QPACK_ENCODER_STREAM_ERROR";
    if (code == 0x202) return "QPACK_DECODER_STREAM_ERROR";
    return fmt::format("{:#x}", code);
}

Session::Impl::Impl(bool is_server, SessionConfig cfg) : server(is_server), config(std::move(cfg)) {
    const nghttp3_callbacks cb = session_callbacks();
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    settings.max_field_section_size = config.max_field_section_size;
    // No dynamic table for the peer's encoder and so no blocked streams
    // (RFC 9204 §2.1.2): a request's fields decode when its HEADERS arrives.
    settings.qpack_max_dtable_capacity = 0;
    settings.qpack_blocked_streams = 0;
    const int rv = server ? nghttp3_conn_server_new(&h3, &cb, &settings, nullptr, this)
                          : nghttp3_conn_client_new(&h3, &cb, &settings, nullptr, this);
    if (rv != 0) throw SessionError(fmt::format("nghttp3: {}", nghttp3_strerror(rv)));
}

Session::Impl::~Impl() { nghttp3_conn_del(h3); }

// The peer's bytes of one stream into nghttp3, and its FIN once read.
// A stream whose reading stopped (stop_sending, in a callback during
// nghttp3_conn_read_stream: a stream of an unknown type) is read no further;
// the consume of the bytes nghttp3 was given takes nothing then
// (Connection::consume after stop_sending).
void Session::Impl::read(StreamId id) {
    const auto sid = static_cast<std::int64_t>(id);
    RequestStream* s = stream(sid);
    bool uni = peer_uni.count(sid) > 0;
    const auto reading = [&] { return s ? !s->discard && !s->reset_by_peer : uni; };
    if (!reading()) return;  // closed already (a late event), stopped, reset, or not ours to read
    for (;;) {
        const std::span<const std::uint8_t> bytes = conn->peek(id);
        if (bytes.empty()) break;
        const nghttp3_ssize n = nghttp3_conn_read_stream(h3, sid, bytes.data(), bytes.size(), 0);
        if (n < 0) return fail(static_cast<int>(n), "reading a stream");
        conn->consume(id, bytes.size());
        s = stream(sid);  // a callback may have closed or stopped it
        uni = peer_uni.count(sid) > 0;
        if (!reading()) return;
    }
    if (!conn->stream_finished(id)) return;
    if (s && s->fin_read) return;
    if (s) s->fin_read = true;
    // A finished stream that is no request is forgotten here, as one nghttp3
    // stopped is in abort_receive, so that a peer opening and ending streams
    // of unknown types grows no state (RFC 9114 §6.2.3: they are read and
    // ignored); a late event for it finds nothing.
    if (uni) peer_uni.erase(sid);
    const nghttp3_ssize n = nghttp3_conn_read_stream(h3, sid, nullptr, 0, 1);
    if (n < 0) return fail(static_cast<int>(n), "the end of a stream");
    maybe_close(sid);
}

// Everything nghttp3 has to send, as far as the send buffers take it.
void Session::Impl::write_all() {
    std::array<nghttp3_vec, 16> vec;
    // Also a client's 0-RTT (requests in the first flight, RFC 9114 §A.2.4).
    while (error.empty() && (conn->is_established() || conn->can_send_early_data())) {
        std::int64_t sid = -1;
        int fin = 0;
        const nghttp3_ssize count = nghttp3_conn_writev_stream(h3, &sid, &fin, vec.data(), vec.size());
        if (count < 0) return fail(static_cast<int>(count), "writing a stream");
        if (sid < 0) break;
        const auto id = static_cast<StreamId>(sid);
        std::size_t total = 0, taken = 0;
        for (nghttp3_ssize i = 0; i < count; ++i) total += vec[i].len;
        for (nghttp3_ssize i = 0; i < count; ++i) {
            const bool last = i + 1 == count;
            const std::size_t n = conn->write(id, {vec[i].base, vec[i].len}, fin && last);
            taken += n;
            if (n < vec[i].len) break;
        }
        if (count == 0 && fin) conn->finish(id);
        const bool fin_taken = fin && taken == total;
        if (taken < total) {  // the send buffer is full: StreamWritable unblocks it
            nghttp3_conn_block_stream(h3, sid);
            blocked.insert(sid);
        }
        if (int rv = nghttp3_conn_add_write_offset(h3, sid, taken); rv != 0) return fail(rv, "a write offset");
        if (int rv = nghttp3_conn_add_ack_offset(h3, sid, taken); rv != 0) return fail(rv, "an ack offset");
        if (fin_taken) {
            if (RequestStream* s = stream(sid)) {
                s->fin_written = true;
                maybe_close(sid);
            }
        }
    }
    abort_pending();
}

// Streams whose both halves are done leave nghttp3 (and, through
// stream_close, the session).
void Session::Impl::close_finished() {
    while (!uni_to_close.empty() && error.empty()) {
        const auto [sid, code] = uni_to_close.back();
        uni_to_close.pop_back();
        const int rv = nghttp3_conn_close_stream(h3, sid, code);
        if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fail(rv, "closing a stopped stream");
    }
    while (!to_close.empty()) {
        const std::int64_t sid = to_close.back();
        to_close.pop_back();
        blocked.erase(sid);
        const RequestStream* s = stream(sid);
        if (!s) continue;
        const int rv = nghttp3_conn_close_stream(h3, sid, s->abort_code.value_or(kNoError));
        if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return fail(rv, "closing a stream");
    }
}

// A connection error (RFC 9114 §8): the connection closes with its code,
// and error() says what it was.
void Session::Impl::fail(int rv, const char* what) {
    if (!error.empty()) return;
    const std::uint64_t code = nghttp3_err_infer_quic_app_error_code(rv);
    error = fmt::format("HTTP/3 error {} ({}): {}", error_name(code), what, nghttp3_strerror(rv));
    spdlog::warn("h3: {}", error);
    if (conn && !conn->is_closed()) conn->close(code, error, now);
    end_all(error);
}

// Every request still open ends with `why` (the connection is gone).
void Session::Impl::end_all(const std::string& why) {
    auto open = std::move(streams);
    streams.clear();
    if (server) return;
    for (auto& [id, s] : open)
        if (s.handler.done) s.handler.done(fmt::format("stream {}: {}", id, why));
}

void Session::Impl::answer(std::int64_t id, RequestStream& s) {
    try {
        s.response = config.handler(s.request);
    } catch (const std::exception& e) {
        spdlog::warn("h3: the handler of {} failed: {}", s.request.path, e.what());
        s.response = Response{500, {}, {}};
    }
    if (s.response.body.size > 0 && !s.response.body.fill) s.response.body.size = 0;
    const std::string status = std::to_string(s.response.status);
    const std::string length = std::to_string(s.response.body.size);
    const std::string status_name = ":status", length_name = "content-length";
    std::vector<nghttp3_nv> nva{nv(status_name, status), nv(length_name, length)};
    for (const Field& f : s.response.fields) nva.push_back(nv(f.name, f.value));
    const nghttp3_data_reader reader{read_body};
    const bool head = s.request.method == "HEAD";
    const bool body = s.response.body.size > 0 && !head;
    if (head) s.body_offset = s.response.body.size;
    const int rv = nghttp3_conn_submit_response(h3, id, nva.data(), nva.size(), body ? &reader : nullptr);
    if (rv != 0) fail(rv, "submitting a response");
}

// ---------------------------------------------------------------------------

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::client(SessionConfig config) {
    return std::unique_ptr<Session>(new Session(std::make_unique<Impl>(false, std::move(config))));
}

std::unique_ptr<Session> Session::server(SessionConfig config) {
    if (!config.handler) throw SessionError("an HTTP/3 server session needs a request handler");
    return std::unique_ptr<Session>(new Session(std::make_unique<Impl>(true, std::move(config))));
}

void Session::start(Connection& c) {
    Impl& m = *impl_;
    if (m.started) throw SessionError("HTTP/3 session started twice");
    const auto control = c.open_uni_stream(), encoder = c.open_uni_stream(), decoder = c.open_uni_stream();
    if (!control || !encoder || !decoder)
        throw SessionError(fmt::format("the peer allows {} unidirectional streams; HTTP/3 needs {} (RFC 9114 §6.2)",
                                       c.handshake_summary().peer.initial_max_streams_uni, kMinUniStreams));
    int rv = nghttp3_conn_bind_control_stream(m.h3, static_cast<std::int64_t>(*control));
    if (rv == 0)
        rv = nghttp3_conn_bind_qpack_streams(m.h3, static_cast<std::int64_t>(*encoder),
                                             static_cast<std::int64_t>(*decoder));
    if (rv != 0) throw SessionError(fmt::format("nghttp3: {}", nghttp3_strerror(rv)));
    // What GOAWAY names (RFC 9114 §5.2) is the last request stream received
    // plus one; the transport's MAX_STREAMS, which grows as streams finish,
    // bounds the streams the peer may open, so nghttp3 needs no bound of its own.
    if (m.server) nghttp3_conn_set_max_client_streams_bidi(m.h3, std::uint64_t{1} << 60);
    m.started = true;
}

void Session::on_event(Connection& c, const Event& ev, Instant now) {
    Impl& m = *impl_;
    m.conn = &c;
    m.now = now;
    if (const auto* closed = std::get_if<event::Closed>(&ev)) return on_close(closed->info);
    if (!m.started || !m.error.empty()) return;
    if (const auto* opened = std::get_if<event::StreamOpened>(&ev)) {
        const auto sid = static_cast<std::int64_t>(opened->id);
        if (m.server && !(sid & 0x2)) m.streams.try_emplace(sid);  // a request
        else m.peer_uni.insert(sid);  // control, QPACK, unknown types; a server's bidirectional one is an error nghttp3 raises
        m.read(opened->id);
    } else if (const auto* readable = std::get_if<event::StreamReadable>(&ev)) {
        m.read(readable->id);
    } else if (const auto* reset = std::get_if<event::StreamReset>(&ev)) {
        m.on_peer_reset(static_cast<std::int64_t>(reset->id), reset->error_code);
    } else if (const auto* stopped = std::get_if<event::StreamStopped>(&ev)) {
        m.on_peer_stop(static_cast<std::int64_t>(stopped->id), stopped->error_code);
    } else if (const auto* writable = std::get_if<event::StreamWritable>(&ev)) {
        const auto sid = static_cast<std::int64_t>(writable->id);
        if (m.blocked.erase(sid)) {
            if (int rv = nghttp3_conn_unblock_stream(m.h3, sid); rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND)
                m.fail(rv, "unblocking a stream");
        }
    }
    for (std::size_t i = 0; i < m.to_answer.size() && m.error.empty(); ++i)
        if (RequestStream* s = m.stream(m.to_answer[i])) m.answer(m.to_answer[i], *s);
    m.to_answer.clear();
    m.close_finished();
}

void Session::on_close(const CloseInfo& i) {
    impl_->end_all(fmt::format("the connection closed ({}{}{})",
                               i.application ? error_name(i.code) : close_code_name(i.code),
                               i.reason.empty() ? "" : ": ", i.reason));
}

void Session::flush(Connection& c, Instant now) {
    Impl& m = *impl_;
    m.conn = &c;
    m.now = now;
    if (!m.started || !m.error.empty()) return;
    m.write_all();
    m.close_finished();
}

std::optional<StreamId> Session::submit(Connection& c, const Request& request, ResponseHandler handler) {
    Impl& m = *impl_;
    if (m.server) throw SessionError("an HTTP/3 server does not submit requests");
    if (!m.started) throw SessionError("submit() before start()");
    if (m.goaway || !m.error.empty()) return std::nullopt;
    const auto id = c.open_stream();
    if (!id) return std::nullopt;
    const std::string method = ":method", scheme = ":scheme", authority = ":authority", path = ":path";
    std::vector<nghttp3_nv> nva{nv(method, request.method), nv(scheme, request.scheme),
                                nv(authority, request.authority), nv(path, request.path)};
    for (const Field& f : request.fields) nva.push_back(nv(f.name, f.value));
    const auto sid = static_cast<std::int64_t>(*id);
    m.streams[sid].handler = std::move(handler);
    if (const int rv = nghttp3_conn_submit_request(m.h3, sid, nva.data(), nva.size(), nullptr, nullptr); rv != 0) {
        m.streams.erase(sid);
        throw SessionError(fmt::format("request {}: {}", request.path, nghttp3_strerror(rv)));
    }
    return id;
}

void Session::cancel(Connection& c, StreamId id, std::uint64_t code, Instant now) {
    Impl& m = *impl_;
    m.conn = &c;
    m.now = now;
    if (!m.started || !m.error.empty()) return;
    m.cancel(static_cast<std::int64_t>(id), code);
    m.close_finished();
}

void Session::shutdown(Connection& c) {
    Impl& m = *impl_;
    m.conn = &c;
    if (!m.started || !m.error.empty()) return;
    // A notice first (the largest ID), then the real limit (RFC 9114 §5.2):
    // requests already received are answered.
    int rv = m.server ? nghttp3_conn_submit_shutdown_notice(m.h3) : 0;
    if (rv == 0) rv = nghttp3_conn_shutdown(m.h3);
    if (rv != 0 && rv != NGHTTP3_ERR_INVALID_STATE) m.fail(rv, "GOAWAY");
}

std::size_t Session::open_requests() const { return impl_->streams.size(); }
bool Session::goaway_received() const { return impl_->goaway; }
const std::string& Session::error() const { return impl_->error; }

}  // namespace ndm::h3
