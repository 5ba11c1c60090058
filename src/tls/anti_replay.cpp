#include "tls/anti_replay.hpp"

#include <stdexcept>

namespace ndm::tls {

namespace {

int add_cb(void* ptr, std::time_t expires, const gnutls_datum_t* key, const gnutls_datum_t*) {
    auto* self = static_cast<AntiReplay*>(ptr);
    const std::string k(reinterpret_cast<const char*>(key->data), key->size);
    return self->add(expires, k) ? 0 : GNUTLS_E_DB_ENTRY_EXISTS;
}

}  // namespace

AntiReplay::AntiReplay() {
    if (gnutls_anti_replay_init(&ar_) < 0) throw std::runtime_error("TLS: gnutls_anti_replay_init failed");
    gnutls_anti_replay_set_add_function(ar_, add_cb);
    gnutls_anti_replay_set_ptr(ar_, this);
}

AntiReplay::~AntiReplay() { gnutls_anti_replay_deinit(ar_); }

void AntiReplay::enable(gnutls_session_t session, std::chrono::milliseconds window) {
    {
        const std::lock_guard lock(mutex_);
        if (window.count() < 1) window = std::chrono::milliseconds(1);
        if (window != window_) {
            window_ = window;
            gnutls_anti_replay_set_window(ar_, static_cast<unsigned>(window.count()));
        }
    }
    gnutls_anti_replay_enable(session, ar_);
}

// GnuTLS passes the time the entry stops mattering (the ClientHello's time
// plus the window); an entry whose time is more than a window before the
// newest one's is past it. So no clock is read here.
bool AntiReplay::add(std::time_t expires, const std::string& key) {
    const std::lock_guard lock(mutex_);
    const auto window_s = static_cast<std::time_t>((window_.count() + 999) / 1000);
    const std::time_t stale_before = expires - window_s;
    while (!by_expiry_.empty() && by_expiry_.begin()->first < stale_before) {
        keys_.erase(by_expiry_.begin()->second);
        by_expiry_.erase(by_expiry_.begin());
    }
    if (keys_.count(key) != 0) {
        ++counts_.replayed;
        return false;
    }
    if (keys_.size() >= kMaxEntries) {
        ++counts_.full;
        return false;
    }
    keys_.insert(key);
    by_expiry_.emplace(expires, key);
    ++counts_.accepted;
    return true;
}

AntiReplay::Counts AntiReplay::counts() const {
    const std::lock_guard lock(mutex_);
    return counts_;
}

}  // namespace ndm::tls
