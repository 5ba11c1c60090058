// The blocking facade over an Endpoint (ndm/endpoint.hpp): one bidirectional
// stream per connection, each call running the endpoint's loop until it can
// return. Uses only the Endpoint's public API, so it is a client of the event
// loop rather than part of it.
#include <algorithm>

#include <fmt/format.h>

#include "ndm/endpoint.hpp"

namespace ndm {

namespace {
std::string close_reason(const Endpoint& ep, ConnectionHandle h) {
    if (const CloseInfo* ci = ep.close_info(h)) {
        return ci->reason.empty() ? fmt::format("closed with code {:#x}", ci->code) : ci->reason;
    }
    return "connection closed";
}
}  // namespace

// The peer's RESET_STREAM (reading) or STOP_SENDING (writing) as an error
// naming its code, once the endpoint has seen it.
void BlockingStream::throw_if_aborted(const char* what, bool reading) const {
    const auto a = ep_->stream_abort(handle_, stream_);
    if (!a) return;
    if (reading && a->reset_code)
        throw StreamAbortedError(fmt::format("ndm: {} failed: the peer reset stream {} with code {:#x}", what, stream_,
                                             *a->reset_code),
                                 *a->reset_code);
    if (!reading && a->stop_code)
        throw StreamAbortedError(fmt::format("ndm: {} failed: the peer stopped stream {} with code {:#x} (STOP_SENDING)",
                                             what, stream_, *a->stop_code),
                                 *a->stop_code);
}

BlockingStream BlockingStream::connect(Endpoint& ep, const std::string& host, std::uint16_t port, Duration timeout) {
    const ConnectionHandle h = ep.connect(host, port);
    ep.run_until(
        [&] {
            const Connection* c = ep.find(h);
            return !c || c->state() != ConnectionState::handshaking;
        },
        timeout);
    Connection* c = ep.connection(h);
    if (!c || !c->is_established()) {
        std::string why = c && c->state() == ConnectionState::handshaking ? "timed out" : close_reason(ep, h);
        if (c && c->state() == ConnectionState::handshaking) c->close(0, "connect timed out", steady_now());
        throw EndpointError(fmt::format("ndm: connect to {}:{} failed: {}", host, port, why));
    }
    auto s = c->open_stream();
    if (!s) throw EndpointError("ndm: peer allows no streams");
    return BlockingStream(ep, h, *s);
}

BlockingStream BlockingStream::accept(Endpoint& ep, Duration timeout) {
    std::optional<ConnectionHandle> h;
    const Instant end = steady_now() + timeout;
    ep.run_until([&] { return (h = ep.next_accepted()).has_value(); }, timeout);
    if (!h) throw EndpointError("ndm: accept timed out");
    const Duration left = std::max(Duration{0}, end - steady_now());
    ep.run_until([&] { return ep.peer_stream(*h).has_value() || !ep.find(*h) || ep.close_info(*h); }, left);
    auto s = ep.peer_stream(*h);
    if (!s) {
        throw EndpointError(ep.find(*h) && !ep.close_info(*h) ? "ndm: accept timed out waiting for the peer's stream"
                                                               : "ndm: accepted connection closed: " +
                                                                     close_reason(ep, *h));
    }
    return BlockingStream(ep, *h, *s);
}

Connection& BlockingStream::conn(const char* what) {
    Connection* c = ep_->connection(handle_);
    if (!c || ep_->close_info(handle_)) {
        throw EndpointError(fmt::format("ndm: {} failed: {}", what, close_reason(*ep_, handle_)));
    }
    return *c;
}

void BlockingStream::write(std::span<const std::uint8_t> data, Duration timeout) {
    const Instant end = steady_now() + timeout;
    while (!data.empty()) {
        throw_if_aborted("write", false);
        const std::size_t n = conn("write").write(stream_, data);
        written_ += n;
        data = data.subspan(n);
        if (data.empty()) break;
        if (steady_now() >= end) throw EndpointError("ndm: write timed out");
        ep_->run_once(end);
    }
}

std::size_t BlockingStream::read(std::span<std::uint8_t> out, Duration timeout) {
    const Instant end = steady_now() + timeout;
    for (;;) {
        Connection* c = ep_->connection(handle_);
        if (c) {
            note_delivery(*c);
            if (std::size_t n = c->read(stream_, out)) return n;
            if (c->stream_finished(stream_)) return 0;
        }
        throw_if_aborted("read", true);
        conn("read");  // throws once closed
        if (steady_now() >= end) throw EndpointError("ndm: read timed out");
        ep_->run_once(end);
    }
}

void BlockingStream::note_delivery(const Connection& c) {
    // Remembered for close(), which may find the connection gone (the peer
    // closed it once it had everything).
    if (finished_ && !delivered_ && c.stream_send_acked(stream_)) {
        delivered_ = true;
        acked_ = written_;
    }
}

void BlockingStream::finish() {
    throw_if_aborted("finish", false);
    conn("finish").finish(stream_);
    finished_ = true;
}

namespace {
bool is_open(const Connection* c) {
    return c && (c->state() == ConnectionState::handshaking || c->is_established());
}
}  // namespace

void BlockingStream::close(Duration timeout) {
    Connection* c = ep_->connection(handle_);
    const auto stopped = ep_->stream_abort(handle_, stream_);
    if (is_open(c) && !finished_ && !(stopped && stopped->stop_code)) {
        c->finish(stream_);
        finished_ = true;
    }
    // Linger while the peer keeps acknowledging: what we wrote and the FIN
    // must reach it before the connection goes (a close abandons the rest).
    Instant quiet_until = steady_now() + timeout;
    auto settled = [&] {  // delivered, or nothing more can be: stop waiting
        const Connection* cc = ep_->find(handle_);
        if (!cc) return true;
        delivered_ = delivered_ || cc->stream_send_acked(stream_);
        if (const std::uint64_t n = cc->stats(steady_now()).stream_bytes_acked; n > acked_) {
            acked_ = n;
            quiet_until = steady_now() + timeout;
        }
        if (const auto a = ep_->stream_abort(handle_, stream_); a && a->stop_code) return true;  // nothing more will be
        return delivered_ || !is_open(cc);
    };
    while (!settled() && steady_now() < quiet_until) {
        ep_->run_until([&] { return settled() || steady_now() >= quiet_until; },
                       std::max(Duration{0}, quiet_until - steady_now()));
    }
    c = ep_->connection(handle_);
    std::string failure;
    const auto aborted = ep_->stream_abort(handle_, stream_);
    if (!delivered_ && aborted && aborted->stop_code) {
        failure = fmt::format("ndm: close: the peer stopped stream {} with code {:#x} (STOP_SENDING) after {} of {} bytes "
                              "written were acknowledged",
                              stream_, *aborted->stop_code, std::min(acked_, written_), written_);
    } else if (!delivered_) {
        const std::string why = is_open(c) ? fmt::format("nothing acknowledged for {:g} s",
                                                         std::chrono::duration<double>(timeout).count())
                                           : "connection closed: " + close_reason(*ep_, handle_);
        failure = fmt::format("ndm: close: the peer acknowledged {} of {} bytes written{}; {}", std::min(acked_, written_),
                              written_, acked_ >= written_ ? " but not the stream's end" : "", why);
    }
    if (is_open(c)) {
        if (failure.empty()) {
            c->close(0, "closed by application", steady_now());
        } else {
            c->close(kCloseAbandoned,
                     fmt::format("closed with {} of {} bytes unacknowledged", written_ - std::min(acked_, written_),
                                 written_),
                     steady_now());
        }
    }
    // A few loop turns send the close frame.
    for (int i = 0; i < 3 && ep_->find(handle_); ++i) ep_->run_once(steady_now());
    if (!failure.empty() && aborted && aborted->stop_code) throw StreamAbortedError(failure, *aborted->stop_code);
    if (!failure.empty()) throw EndpointError(failure);
}

}  // namespace ndm
