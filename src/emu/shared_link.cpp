// SharedLink: one EmulatedLink, many connections (include/ndm/emu.hpp). Each
// port tags its datagrams with its number (the tag rides in the pipeline's
// slot, so it costs no bytes on the link and a corrupted bit cannot misroute
// it); a datagram is taken off the link at its due time by whichever port asks
// first and queued for the port it names, as run_shared_path's Demux does in
// virtual time (src/sim/shared_path.cpp).
#include <algorithm>
#include <utility>

#include "ndm/emu.hpp"

namespace ndm::emu {

class SharedLink::Port final : public Link {
public:
    Port(std::shared_ptr<SharedLink> owner, std::uint64_t id) : owner_(std::move(owner)), id_(id) {}
    ~Port() override { owner_->queues_.erase(id_); }
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    void send(const DatagramView& datagram, Instant now) override { owner_->link_->send_tagged(datagram, now, id_); }
    // The head of this port's queue, else the link's next event, which may
    // turn out to be another port's datagram (deliver() then returns false
    // after queueing it for that port).
    [[nodiscard]] Instant next_delivery() const override {
        const auto& q = queue();
        return q.empty() ? owner_->link_->next_delivery() : q.front().due;
    }
    bool deliver(Instant now, Datagram& out) override {
        owner_->pull(now);
        auto& q = queue();
        if (q.empty() || q.front().due > now) return false;
        out.bytes.swap(q.front().data);
        out.ecn = q.front().ecn;
        owner_->spare_.push_back(std::move(q.front().data));  // the caller's old buffer, reused later
        q.pop_front();
        return true;
    }
    [[nodiscard]] LinkStats stats() const override { return owner_->link_->stats(); }

private:
    [[nodiscard]] std::deque<Queued>& queue() const { return owner_->queues_.at(id_); }

    std::shared_ptr<SharedLink> owner_;
    std::uint64_t id_;
};

SharedLink::SharedLink(std::unique_ptr<EmulatedLink> link) : link_(std::move(link)) {}
SharedLink::~SharedLink() = default;

std::unique_ptr<Link> SharedLink::port() {
    const std::uint64_t id = next_port_++;
    queues_.emplace(id, std::deque<Queued>{});
    return std::make_unique<Port>(shared_from_this(), id);
}

void SharedLink::pull(Instant now) {
    for (Instant due = link_->next_delivery(); due <= now; due = link_->next_delivery()) {
        std::uint64_t tag = 0;
        if (!link_->deliver_tagged(now, rx_, tag)) break;  // a lazy queue decision, nothing due yet
        const auto it = queues_.find(tag);
        if (it == queues_.end()) {
            ++orphaned_;
            continue;
        }
        std::vector<std::uint8_t> buf;
        if (!spare_.empty()) {
            buf = std::move(spare_.back());
            spare_.pop_back();
        }
        buf.swap(rx_.bytes);
        it->second.push_back({std::min(due, now), std::move(buf), rx_.ecn});
    }
}

}  // namespace ndm::emu
