// Scenario generation for ndm-train (docs/ndm-training.md §1–2): seeded
// random network scenarios run in virtual time, with every congestion event
// the sender's controller sees labelled from the emulator's drop reasons.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ndm/emu.hpp"
#include "ndm/sim.hpp"
#include "train/dataset.hpp"

namespace ndm::train {

struct ScenarioSpec {
    ScenarioInfo info;
    std::string controller;    // the sender's controller (cubic, reno, ndm, or any registered name)
    std::string cc_options;    // passed to that controller
    std::string profile;       // emulator profile spec (emu::parse_profile)
    std::size_t packet_size = 1452;
    double seconds = 10;       // virtual sending time
    double buffer_bdp = 0;     // the bottleneck buffer in BDPs (loss, burst, codel families; 0 otherwise)
    long long buffer_packets = 0;  // and in packets
    // Competing flows sharing the bottleneck (sim::run_shared_path), by
    // controller name, each starting competitor_start after the recorded flow.
    std::vector<std::string> competitors;
    double competitor_start = 0;  // seconds
    std::string competitor_ndm_options;  // options of competing ndm flows
};

struct GenerateOptions {
    std::uint64_t seed = 1;
    std::size_t scenarios = 600;
    double seconds = 12;  // upper bound on a scenario's virtual sending time
    std::vector<std::string> controllers{"cubic", "reno", "ndm"};
    // For the ndm sender. The default pins the model the dataset's ndm flows
    // run (the hand-set v1 the shipped learned model was trained with), so a
    // dataset does not change when the compiled-in default does.
    std::string ndm_options = "model=" NDM_TRAIN_MODELS_DIR "/ndm-handset-v1.ndmm";
    // Fraction of bottleneck scenarios (loss, burst, codel families) given
    // 1–3 competing cubic/reno/ndm flows on the bottleneck. Drawn from a
    // separate random stream: every other parameter of every scenario is the
    // same as with 0 (the default, which the shipped models were trained with).
    double compete = 0;
};

// The small fixed "check set" whose AUC `ndm-train ship` records in the
// shipped model's description and tests/test_ndm_train.cpp regenerates.
GenerateOptions check_options();

// The deterministic scenario list of a seed (same options → same list).
std::vector<ScenarioSpec> make_scenarios(const GenerateOptions& o);

// Runs one scenario and returns a record per congestion event seen after
// the first RTT sample (events before it have no features).
struct ScenarioOutcome {
    double goodput_mbit = 0;    // delivered to the receiver over the sending time
    std::uint64_t packets_sent = 0;
    std::uint64_t packets_lost = 0;  // declared lost by the sender
    std::uint64_t unattributed_drops = 0;  // dropped packets no event claimed (e.g. still pending at the end)
    LinkStats path;        // the client → server link's counters (datagrams sent, dropped by cause)
    std::string failure;        // why the transfer did not complete, if it did not
};
std::vector<Record> run_scenario(const ScenarioSpec& s, ScenarioOutcome* outcome = nullptr);

// make_scenarios + run_scenario for each; progress(i, n) after each.
Dataset generate(const GenerateOptions& o,
                 const std::function<void(std::size_t, std::size_t, const ScenarioSpec&, const ScenarioOutcome&)>& progress = {});

// ---------------------------------------------------------------- labelling
// Exposed for tests: assigns an event's lost packets to emulator drops.

struct SentPacket {
    Instant time;
    std::uint64_t bytes = 0;
    enum class Fate : std::uint8_t { unknown, delivered, dropped } fate = Fate::unknown;
    emu::DropReason reason = emu::DropReason::random;
};

// Ground truth for one flow: the sender's in-flight packets in send order
// (seq), their fate at the emulator, and the attribution of congestion events.
class LossLedger {
public:
    // The controller was told a packet was sent (PacketSent, in-flight only).
    void on_packet_sent(Instant time, std::uint64_t bytes);
    // The link accepted a datagram: it is the packet just announced, if any
    // (the transport announces each in-flight packet right before the
    // simulator hands it to the link), else a non-in-flight datagram (ACK).
    void on_link_send();
    // The emulator's observer.
    void on_emulator(const emu::PacketEvent& ev);
    // The rule (docs/ndm-training.md §2): the event's lost packets are the
    // oldest not yet attributed dropped packets sent at or before
    // largest_lost_sent_time, at most packets_lost of them; the rest of
    // packets_lost were delivered late (spurious).
    std::array<std::uint32_t, kCauseCount> attribute(std::uint64_t packets_lost, Instant largest_lost_sent_time);

    [[nodiscard]] const std::vector<SentPacket>& packets() const { return sent_; }
    [[nodiscard]] std::size_t unattributed_drops() const { return pending_.size(); }

private:
    std::vector<SentPacket> sent_;
    std::vector<std::int64_t> index_to_seq_;  // emulator send index → seq, −1 for non-in-flight
    std::set<std::uint64_t> pending_;         // dropped, not yet attributed seqs
    bool announced_ = false;
};

// Label of an event from its causes: congestive when any packet was a
// queue overflow, AQM (CoDel) or trace-outage drop.
int label_of(const std::array<std::uint32_t, kCauseCount>& causes);

}  // namespace ndm::train
