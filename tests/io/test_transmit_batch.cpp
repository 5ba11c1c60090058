// The Endpoint's send batching (src/io/transmit_batch.*) over a fake Backend
// that records what it is asked to send: no socket. The GSO rule (udp(7),
// UDP_SEGMENT): one destination, equal segments with only the last shorter, at
// most 64 segments and 65507 bytes; a slot shortage stashes in order.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "io/backend.hpp"
#include "io/transmit_batch.hpp"

using ndm::io::Address;
using ndm::io::GsoRun;
using ndm::io::TransmitBatch;

namespace {

struct Sent {
    std::vector<std::uint8_t> bytes;
    std::size_t segment;
    Address to;
};

class FakeBackend final : public ndm::io::Backend {
public:
    explicit FakeBackend(bool gso, std::size_t slots = 1000) : slots_(slots) { gso_ = gso; }
    [[nodiscard]] ndm::IoBackend kind() const override { return ndm::IoBackend::epoll; }
    [[nodiscard]] int pollable_fd() const override { return -1; }
    [[nodiscard]] std::uint64_t send_errors() const override { return 0; }
    std::uint8_t* tx_slot() override {
        if (slots_ == 0) return nullptr;
        if (!slot_) {
            memory_.push_back(std::make_unique<std::uint8_t[]>(ndm::io::kTxSlotSize));
            slot_ = memory_.back().get();
        }
        return slot_;
    }
    void tx_queue(std::size_t len, std::size_t segment, const Address& to, ndm::Ecn) override {
        REQUIRE(slots_ > 0);
        --slots_;
        sent.push_back({{slot_, slot_ + len}, segment, to});
        slot_ = nullptr;  // the next slot is other memory; this one stays intact, as in TxPool
    }
    void flush() override {}
    void wait(ndm::Instant, ndm::io::RxHandler&) override {}
    void give_slots(std::size_t n) { slots_ += n; }

    std::vector<Sent> sent;

private:
    std::size_t slots_;
    std::uint8_t* slot_ = nullptr;
    std::vector<std::unique_ptr<std::uint8_t[]>> memory_;
};

const Address kA = Address::parse("127.0.0.1", 1000);
const Address kB = Address::parse("127.0.0.1", 2000);

std::vector<std::uint8_t> datagram(std::size_t n, std::uint8_t fill) { return std::vector<std::uint8_t>(n, fill); }

// Sizes of the datagrams one recorded send carries.
std::vector<std::size_t> split(const Sent& s) {
    if (s.segment == 0) return {s.bytes.size()};
    std::vector<std::size_t> out;
    for (std::size_t off = 0; off < s.bytes.size(); off += s.segment) out.push_back(std::min(s.segment, s.bytes.size() - off));
    return out;
}

}  // namespace

TEST_CASE("transmit batch: equal datagrams to one peer leave as one GSO send, the last may be shorter") {
    FakeBackend be(true);
    TransmitBatch b(be);
    for (int i = 0; i < 5; ++i) CHECK(b.copy(kA, datagram(1200, static_cast<std::uint8_t>(i))));
    CHECK(b.copy(kA, datagram(700, 9)));
    CHECK(b.pending() == 6);
    CHECK(b.flush() == 6);
    REQUIRE(be.sent.size() == 1);
    CHECK(be.sent[0].segment == 1200);
    CHECK(split(be.sent[0]) == std::vector<std::size_t>{1200, 1200, 1200, 1200, 1200, 700});
    CHECK(be.sent[0].bytes[1200 * 3] == 3);
    CHECK(be.sent[0].bytes.back() == 9);
    CHECK(b.flush() == 0);  // nothing open: no send
    CHECK(be.sent.size() == 1);
}

TEST_CASE("transmit batch: a shorter datagram closes the batch, a larger one or another peer starts a new one") {
    FakeBackend be(true);
    TransmitBatch b(be);
    CHECK(b.copy(kA, datagram(1000, 1)));
    CHECK(b.copy(kA, datagram(500, 2)));   // shorter: joins, and is the last
    CHECK(b.copy(kA, datagram(500, 3)));   // new batch
    CHECK(b.copy(kA, datagram(800, 4)));   // larger than 500: new batch
    CHECK(b.copy(kB, datagram(800, 5)));   // another peer: new batch
    b.flush();
    REQUIRE(be.sent.size() == 4);
    CHECK(split(be.sent[0]) == std::vector<std::size_t>{1000, 500});
    CHECK(be.sent[1].segment == 0);  // a single datagram is no GSO send
    CHECK(split(be.sent[1]) == std::vector<std::size_t>{500});
    CHECK(split(be.sent[2]) == std::vector<std::size_t>{800});
    CHECK(be.sent[3].to == kB);
    CHECK(be.sent[3].bytes[0] == 5);
    CHECK(b.queued() == 5);  // the flushes copy() made on its own count too
}

TEST_CASE("transmit batch: at most 64 segments and 65507 bytes per send") {
    FakeBackend be(true);
    TransmitBatch b(be);
    for (int i = 0; i < 65; ++i) CHECK(b.copy(kA, datagram(100, 0)));
    b.flush();
    REQUIRE(be.sent.size() == 2);
    CHECK(split(be.sent[0]).size() == ndm::io::kMaxGsoSegments);
    CHECK(split(be.sent[1]).size() == 1);

    be.sent.clear();
    for (int i = 0; i < 50; ++i) CHECK(b.copy(kA, datagram(1400, 0)));  // 46 × 1400 ≤ 65507 < 47 × 1400
    b.flush();
    REQUIRE(be.sent.size() == 2);
    CHECK(be.sent[0].bytes.size() == 46 * 1400);
    CHECK(be.sent[0].bytes.size() <= ndm::io::kMaxUdpPayload);
    CHECK(split(be.sent[1]).size() == 4);
}

TEST_CASE("transmit batch: without GSO every datagram is its own send") {
    FakeBackend be(false);
    TransmitBatch b(be);
    for (int i = 0; i < 3; ++i) CHECK(b.copy(kA, datagram(1200, 0)));
    b.flush();
    REQUIRE(be.sent.size() == 3);
    for (const auto& s : be.sent) CHECK(s.segment == 0);
}

TEST_CASE("transmit batch: datagrams written in place join, or move to a fresh slot when they break the rule") {
    FakeBackend be(true);
    TransmitBatch b(be);
    for (std::uint8_t fill : {1, 2, 3}) {
        std::uint8_t* at = b.reserve(kA, 1500);
        REQUIRE(at != nullptr);
        const std::size_t n = fill == 3 ? 1300 : 1000;  // the third is larger: a new batch
        std::fill(at, at + n, fill);
        CHECK(b.commit(n));
    }
    CHECK(b.reserve(kB, 1500) != nullptr);  // another peer flushes the open batch
    CHECK(b.flush() == 0);
    REQUIRE(be.sent.size() == 2);
    CHECK(split(be.sent[0]) == std::vector<std::size_t>{1000, 1000});
    CHECK(be.sent[1].bytes == datagram(1300, 3));
}

TEST_CASE("transmit batch: without free slots datagrams wait in the stash, in order") {
    FakeBackend be(true, 1);
    TransmitBatch b(be);
    CHECK(b.send_or_stash(kA, datagram(1000, 1)));
    CHECK(!b.send_or_stash(kB, datagram(1000, 2)));  // flushes kA's batch, no slot is left for kB
    CHECK(!b.stash_empty());
    CHECK(!b.send_or_stash(kA, datagram(1000, 3)));  // behind the stash, though a batch could take it
    CHECK(!b.flush_stash());
    be.give_slots(2);
    CHECK(b.flush_stash());
    CHECK(b.stash_empty());
    b.flush();
    REQUIRE(be.sent.size() == 3);
    CHECK(be.sent[0].bytes[0] == 1);
    CHECK(be.sent[1].to == kB);
    CHECK(be.sent[1].bytes[0] == 2);
    CHECK(be.sent[2].bytes[0] == 3);
}

TEST_CASE("gso run: only a non-empty, unclosed run of larger-or-equal segments accepts more") {
    GsoRun r;
    CHECK(!r.accepts(1));  // empty: the first datagram opens a run, it does not join one
    r.add(1000);
    CHECK(r.accepts(1000));
    CHECK(!r.accepts(1001));
    r.add(10);
    CHECK(!r.accepts(10));
    CHECK(r.len() == 1010);
    CHECK(r.count() == 2);
    r.clear();
    CHECK(r.count() == 0);
}
