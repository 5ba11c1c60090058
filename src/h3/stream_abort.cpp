// Stream cancellation between nghttp3 and the transport (stream_abort.hpp).
// ngtcp2's example client and server are the model: nghttp3's reset_stream
// and stop_sending callbacks become the transport's shutdown of that half,
// the peer's RESET_STREAM becomes nghttp3_conn_shutdown_stream_read, its
// STOP_SENDING nghttp3_conn_shutdown_stream_write (the transport has reset
// that half already, RFC 9000 §3.5), and a request stream whose halves have
// both ended, one of them abandoned, closes in nghttp3 with the code, which
// a client's done() names.
#include "h3/stream_abort.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "h3/session_impl.hpp"

namespace ndm::h3 {

void abandon_send(Connection& c, StreamId id, std::uint64_t code) {
    try {
        c.reset_stream(id, code);
        spdlog::debug("h3: stream {}: our sending reset with {}", id, error_name(code));
    } catch (const std::invalid_argument&) {  // released by the transport: nothing left to reset
        spdlog::debug("h3: stream {}: no sending left to reset ({})", id, error_name(code));
    }
}

void abandon_receive(Connection& c, StreamId id, std::uint64_t code) {
    try {
        c.stop_sending(id, code);
        spdlog::debug("h3: stream {}: the peer asked to stop sending ({})", id, error_name(code));
    } catch (const std::invalid_argument&) {
        spdlog::debug("h3: stream {}: no reading left to stop ({})", id, error_name(code));
    }
}

// ---------------------------------------------------------------------------

void Session::Impl::abort_send(std::int64_t sid, std::uint64_t code, bool tell_nghttp3) {
    RequestStream* s = stream(sid);
    if (s && (s->fin_written || s->send_aborted)) return;
    abandon_send(*conn, static_cast<StreamId>(sid), code);
    if (tell_nghttp3) nghttp3_conn_shutdown_stream_write(h3, sid);
    blocked.erase(sid);
    if (!s) return;
    s->send_aborted = true;
    s->chunks.clear();
    s->front_released = 0;
    if (!s->abort_code) s->abort_code = code;
    maybe_close(sid);
}

void Session::Impl::abort_receive(std::int64_t sid, std::uint64_t code, bool tell_nghttp3) {
    RequestStream* s = stream(sid);
    if (s && s->read_ended()) return;
    abandon_receive(*conn, static_cast<StreamId>(sid), code);
    // One of the peer's unidirectional streams (an unknown type, RFC 9114
    // §6.2.3): nothing more is read, and nghttp3 lets it go at the next
    // close_finished, so that a peer opening such streams grows no state.
    if (peer_uni.erase(sid) > 0) uni_to_close.emplace_back(sid, code);
    if (tell_nghttp3) {
        if (const int rv = nghttp3_conn_shutdown_stream_read(h3, sid); rv != 0) return fail(rv, "stopping a stream");
    }
    if (!s) return;
    s->discard = true;
    if (!s->abort_code) s->abort_code = code;
    maybe_close(sid);
}

// The peer's RESET_STREAM (event::StreamReset): its half ended without its
// end. A request's exchange is over: a client also gives up sending what is
// left of its request, a server the response to a request it did not get
// whole. One of the peer's unidirectional streams leaves nghttp3, which
// calls a critical one's end a connection error (RFC 9114 §6.2.1).
void Session::Impl::on_peer_reset(std::int64_t sid, std::uint64_t code) {
    RequestStream* s = stream(sid);
    if (!s) {
        if (peer_uni.erase(sid) == 0) return;
        const int rv = nghttp3_conn_close_stream(h3, sid, code);
        if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) fail(rv, "a stream the peer reset");
        return;
    }
    spdlog::debug("h3: stream {}: the peer reset its sending with {}", sid, error_name(code));
    if (const int rv = nghttp3_conn_shutdown_stream_read(h3, sid); rv != 0) return fail(rv, "a stream the peer reset");
    s->reset_by_peer = true;
    if (!s->abort_code) s->abort_code = code;
    if (!server || !s->complete) abort_send(sid, kRequestCancelled, true);
    maybe_close(sid);
}

// The peer's STOP_SENDING (event::StreamStopped): the transport has reset
// our half with its code already. Our reading goes on: a server may stop a
// request it has read enough of and still answer it whole (RFC 9114 §4.1,
// H3_NO_ERROR).
void Session::Impl::on_peer_stop(std::int64_t sid, std::uint64_t code) {
    RequestStream* s = stream(sid);
    if (!s || s->fin_written || s->send_aborted) return;
    spdlog::debug("h3: stream {}: the peer asked us to stop sending with {}", sid, error_name(code));
    nghttp3_conn_shutdown_stream_write(h3, sid);
    blocked.erase(sid);
    s->send_aborted = true;
    s->chunks.clear();
    s->front_released = 0;
    if (!s->abort_code) s->abort_code = code;
    maybe_close(sid);
}

void Session::Impl::maybe_close(std::int64_t sid) {
    if (const RequestStream* s = stream(sid); s && s->read_ended() && s->write_ended()) to_close.push_back(sid);
}

void Session::Impl::abort_pending() {
    auto ids = std::move(to_abort);
    to_abort.clear();
    for (const std::int64_t sid : ids) abort_send(sid, kInternalError, true);
}

// A request or its response given up by the application (Session::cancel).
void Session::Impl::cancel(std::int64_t sid, std::uint64_t code) {
    if (!stream(sid)) return;
    abort_receive(sid, code, true);
    abort_send(sid, code, true);
    if (RequestStream* s = stream(sid)) s->abort_code = code;
}

}  // namespace ndm::h3
