#include "transport/paths.hpp"

#include <algorithm>

namespace ndm::transport {

PathSet::PathSet(PathId initial) {
    active_.id = initial;
    active_.validated = true;  // the handshake validates the first path (RFC 9000 §8.1)
}

Path* PathSet::find(PathId id) {
    if (active_.id.id == id.id) return &active_;
    if (fallback_ && fallback_->id.id == id.id) return &*fallback_;
    if (probe_ && probe_->id.id == id.id) return &*probe_;
    return nullptr;
}

Path& PathSet::on_receive(PathId id) {
    if (Path* p = find(id)) return *p;
    return add_probe(id);
}

Path& PathSet::add_probe(PathId id) {
    probe_.emplace();
    probe_->id = id;
    return *probe_;
}

void PathSet::start_validation(Path& p, Instant now, Duration timeout) {
    p.challenges.clear();
    p.challenge_due = now;
    p.deadline = now + timeout;
}

std::optional<PathData> PathSet::take_challenge(Path& p, Instant now, Duration period,
                                                const std::function<PathData()>& random) {
    if (p.challenge_due > now) return std::nullopt;
    if (p.challenges.size() >= kMaxChallenges) {
        p.challenge_due = kNever;
        return std::nullopt;
    }
    p.challenges.push_back(random());
    p.challenge_due = p.challenges.size() < kMaxChallenges ? now + period : kNever;
    return p.challenges.back();
}

std::optional<PathId> PathSet::on_response(const PathData& data) {
    for (Path* p : {&active_, fallback(), probe()}) {
        if (!p || std::ranges::find(p->challenges, data) == p->challenges.end()) continue;
        p->validated = true;
        p->challenges.clear();
        p->challenge_due = p->deadline = kNever;
        p->received = p->sent = 0;
        return p->id;
    }
    return std::nullopt;
}

void PathSet::migrate_to(PathId id) {
    Path next;
    if (Path* p = find(id); p && p != &active_) {
        next = std::move(*p);
        if (p == fallback()) fallback_.reset();
        else probe_.reset();
    } else if (!p) {
        next.id = id;
    } else {
        return;  // already active
    }
    if (active_.validated) fallback_ = std::move(active_);
    active_ = std::move(next);
}

Path PathSet::promote_probe() {
    Path old = std::move(active_);
    active_ = std::move(*probe_);
    probe_.reset();
    if (fallback_ && fallback_->id == active_.id) fallback_.reset();
    return old;
}

bool PathSet::fall_back() {
    if (!fallback_) return false;
    active_ = std::move(*fallback_);
    fallback_.reset();
    return true;
}

Instant PathSet::next_timer() const {
    Instant t = kNever;
    for (const Path* p : {&active_, fallback_ ? &*fallback_ : nullptr, probe_ ? &*probe_ : nullptr}) {
        if (!p) continue;
        t = std::min({t, p->challenge_due, p->deadline});
        if (p->response) t = Instant::min();
    }
    return t;
}

Path* PathSet::wants_probe_datagram(Instant now) {
    for (Path* p : {&active_, fallback(), probe()})
        if (p && (p->response || p->challenge_due <= now)) return p;
    return nullptr;
}

bool PathSet::any_response_pending() const {
    return active_.response || (fallback_ && fallback_->response) || (probe_ && probe_->response);
}

std::vector<std::uint64_t> PathSet::peer_cids_in_use() const {
    std::vector<std::uint64_t> out;
    for (const Path* p : {&active_, fallback_ ? &*fallback_ : nullptr, probe_ ? &*probe_ : nullptr})
        if (p && p->peer_cid) out.push_back(*p->peer_cid);
    return out;
}

}  // namespace ndm::transport
