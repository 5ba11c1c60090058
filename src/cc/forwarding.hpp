// A Controller decorator base: owns a controller and forwards every call to
// it unchanged. A decorator (the ACK-trace recorder of the tests, ndm-train's
// feature tap) derives from it and overrides only the calls it observes,
// calling Forwarding's version to pass the event on, so that a call it does
// not observe can never be dropped or answered differently from the wrapped
// controller.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "ndm/cc.hpp"

namespace ndm::cc {

class Forwarding : public Controller {
public:
    void on_packet_sent(const PacketSent& p) override { inner_->on_packet_sent(p); }
    void on_packet_lost(const PacketLost& p) override { inner_->on_packet_lost(p); }
    void on_ack(const AckEvent& ev) override { inner_->on_ack(ev); }
    void on_congestion_event(const CongestionEvent& ev) override { inner_->on_congestion_event(ev); }
    void on_spurious_congestion(const SpuriousEvent& ev) override { inner_->on_spurious_congestion(ev); }
    void on_idle_restart(Instant now) override { inner_->on_idle_restart(now); }

    [[nodiscard]] std::uint64_t cwnd() const override { return inner_->cwnd(); }
    [[nodiscard]] std::uint64_t ssthresh() const override { return inner_->ssthresh(); }
    [[nodiscard]] std::optional<double> pacing_rate() const override { return inner_->pacing_rate(); }
    [[nodiscard]] std::string_view state() const override { return inner_->state(); }
    // The wrapped controller's name: a decorator is transparent in statistics and qlog.
    [[nodiscard]] std::string_view name() const override { return inner_->name(); }

    // The wrapped controller.
    [[nodiscard]] Controller& inner() noexcept { return *inner_; }
    [[nodiscard]] const Controller& inner() const noexcept { return *inner_; }

protected:
    explicit Forwarding(std::unique_ptr<Controller> inner) : inner_(std::move(inner)) {
        if (!inner_) throw std::invalid_argument("cc::Forwarding: no controller to wrap");
    }

private:
    std::unique_ptr<Controller> inner_;
};

}  // namespace ndm::cc
