// What nghttp3 calls back while it reads the peer's streams or writes ours:
// header fields and body bytes to the request's handler, body bytes released
// once the transport holds them, stream cancellation to the transport
// (stream_abort.hpp), the peer's GOAWAY. A callback never calls nghttp3 back:
// what must follow (a response, a stream's close) is queued in the Impl.
#include <algorithm>
#include <charconv>
#include <string_view>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "h3/session_impl.hpp"

namespace ndm::h3 {
namespace {

Session::Impl& impl(void* user) { return *static_cast<Session::Impl*>(user); }

std::string_view view(nghttp3_rcbuf* b) {
    const nghttp3_vec v = nghttp3_rcbuf_get_buf(b);
    return {reinterpret_cast<const char*>(v.base), v.len};
}

// The transport took `n` more bytes of the stream's body (the session tells
// nghttp3 so as soon as Connection::write has copied them): they are no
// longer needed here.
int acked_stream_data(nghttp3_conn*, std::int64_t id, std::uint64_t n, void* user, void*) {
    RequestStream* s = impl(user).stream(id);
    if (!s) return 0;
    while (n > 0 && !s->chunks.empty()) {
        const std::uint64_t left = s->chunks.front().size() - s->front_released;
        const std::uint64_t take = std::min(left, n);
        s->front_released += take;
        n -= take;
        if (s->front_released == s->chunks.front().size()) {
            s->chunks.pop_front();
            s->front_released = 0;
        }
    }
    return 0;
}

// nghttp3 is done with the stream (after nghttp3_conn_close_stream): the
// client's request ends here, whole only if its message completed.
int stream_close(nghttp3_conn*, std::int64_t id, std::uint64_t code, void* user, void*) {
    Session::Impl& m = impl(user);
    auto it = m.streams.find(id);
    if (it == m.streams.end()) return 0;
    RequestStream s = std::move(it->second);
    m.streams.erase(it);
    if (m.server || !s.handler.done) return 0;
    try {
        if (s.complete && code == kNoError) s.handler.done("");
        else s.handler.done(fmt::format("stream {} closed with {} before the response was complete", id,
                                        error_name(code)));
    } catch (const std::exception& e) {
        spdlog::warn("h3: stream {}: the response's done handler failed: {}", id, e.what());
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

// Body bytes. Their flow-control credit went back to the peer when the
// session read them from the connection (Connection::consume), since they
// are handed on here at once; nothing waits in a buffer.
int recv_data(nghttp3_conn*, std::int64_t id, const std::uint8_t* data, std::size_t n, void* user, void*) {
    Session::Impl& m = impl(user);
    RequestStream* s = m.stream(id);
    if (!s || m.server) return 0;  // a request's body: ndm's server answers GET and HEAD and drops it
    try {
        if (s->handler.data) s->handler.data({data, n});
    } catch (const std::exception& e) {  // never through nghttp3's C frames
        spdlog::warn("h3: stream {}: the response's data handler failed: {}", id, e.what());
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

// Bytes of a stream that QPACK had blocked, consumed now: their credit too
// went back when they were read (the session allows no blocked streams:
// qpack_blocked_streams is 0, so this does not happen).
int deferred_consume(nghttp3_conn*, std::int64_t, std::size_t, void*, void*) { return 0; }

int recv_header(nghttp3_conn*, std::int64_t id, std::int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                std::uint8_t, void* user, void*) {
    Session::Impl& m = impl(user);
    RequestStream* s = m.stream(id);
    if (!s) return 0;
    const std::string_view n = view(name), v = view(value);
    if (!m.server) {
        if (n == ":status") std::from_chars(v.data(), v.data() + v.size(), s->status);  // nghttp3 checked it
        else s->fields.push_back({std::string(n), std::string(v)});
        return 0;
    }
    Request& r = s->request;
    if (n == ":method") r.method = v;
    else if (n == ":scheme") r.scheme = v;
    else if (n == ":authority") r.authority = v;
    else if (n == ":path") r.path = v;
    else r.fields.push_back({std::string(n), std::string(v)});
    return 0;
}

int end_headers(nghttp3_conn*, std::int64_t id, int, void* user, void*) {
    Session::Impl& m = impl(user);
    RequestStream* s = m.stream(id);
    try {
        if (!m.server && s && s->handler.headers) s->handler.headers(s->status, s->fields);
    } catch (const std::exception& e) {
        spdlog::warn("h3: stream {}: the response's header handler failed: {}", id, e.what());
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

int end_stream(nghttp3_conn*, std::int64_t id, void* user, void*) {
    Session::Impl& m = impl(user);
    RequestStream* s = m.stream(id);
    if (!s) return 0;
    s->complete = true;
    if (m.server) m.to_answer.push_back(id);
    return 0;
}

// nghttp3 gives up a half of a stream (a stream of an unknown type, a
// request refused after GOAWAY): the transport's STOP_SENDING or
// RESET_STREAM with its code; nghttp3 has made its own half of the decision.
int stop_sending(nghttp3_conn*, std::int64_t id, std::uint64_t code, void* user, void*) {
    Session::Impl& m = impl(user);
    if (!m.conn) return 0;
    try {
        m.abort_receive(id, code, false);
    } catch (const std::exception& e) {  // never through nghttp3's C frames
        spdlog::warn("h3: stream {}: STOP_SENDING failed: {}", id, e.what());
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

int reset_stream(nghttp3_conn*, std::int64_t id, std::uint64_t code, void* user, void*) {
    Session::Impl& m = impl(user);
    if (!m.conn) return 0;
    try {
        m.abort_send(id, code, false);
    } catch (const std::exception& e) {
        spdlog::warn("h3: stream {}: RESET_STREAM failed: {}", id, e.what());
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

int shutdown(nghttp3_conn*, std::int64_t id, void* user) {
    Session::Impl& m = impl(user);
    m.goaway = true;
    spdlog::debug("h3: the peer sent GOAWAY ({})", id);
    return 0;
}

}  // namespace

nghttp3_callbacks session_callbacks() {
    nghttp3_callbacks cb{};
    cb.acked_stream_data = acked_stream_data;
    cb.stream_close = stream_close;
    cb.recv_data = recv_data;
    cb.deferred_consume = deferred_consume;
    cb.recv_header = recv_header;
    cb.end_headers = end_headers;
    cb.end_stream = end_stream;
    cb.stop_sending = stop_sending;
    cb.reset_stream = reset_stream;
    cb.shutdown = shutdown;
    return cb;
}

}  // namespace ndm::h3
