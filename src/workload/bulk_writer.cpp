// A bulk sender's writes into one stream (ndm/bulk_writer.hpp).
#include "ndm/bulk_writer.hpp"

#include <algorithm>
#include <utility>

namespace ndm::workload {

void BulkWriter::use_source(Source source, std::uint64_t size) {
    source_ = std::move(source);
    limit_ = std::min(limit_, size);
}

std::uint64_t BulkWriter::allowance(const ConnectionStats& st, std::uint64_t send_limit, std::uint64_t upto) const {
    upto = std::min({upto, limit_, send_limit + kChunk});
    const std::uint64_t target = std::max<std::uint64_t>(2 * st.cwnd, 4 * kChunk);
    const std::uint64_t outstanding = written_ - std::min(written_, st.stream_bytes_acked);
    const std::uint64_t unsent = written_ - std::min(written_, st.stream_bytes_sent);
    if (written_ >= upto || outstanding >= target || unsent >= kLead) return 0;
    return std::min({upto - written_, target - outstanding, kLead - unsent});
}

bool BulkWriter::generating(Connection& c, StreamId id) {
    if (!generating_ && !source_ && written_ == 0) {
        generating_ = c.set_stream_source(
            id, [payload = payload_](std::uint64_t offset, std::span<std::uint8_t> out) { payload.fill(offset, out); });
    }
    return generating_;
}

void BulkWriter::write(Connection& c, StreamId id, const ConnectionStats& st, std::uint64_t upto) {
    const std::uint64_t left = allowance(st, c.stream_send_limit(id), upto);
    if (left > 0 && generating(c, id)) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, c.stream_send_capacity(id)));
        const std::size_t taken = c.generate(id, n, written_ + n == limit_);
        if (hashing_) hash_.update(payload_, written_, taken);
        written_ += taken;
        return;
    }
    const std::uint64_t start = written_;
    while (written_ - start < left) {
        const auto n = static_cast<std::size_t>(
            std::min<std::uint64_t>({kChunk, c.stream_send_capacity(id), left - (written_ - start)}));
        if (n == 0) break;
        // Straight into the stream's send buffer; room may be short of n
        // where that buffer wraps (the loop comes back for more).
        const std::span<std::uint8_t> room = c.prepare(id, n);
        if (room.empty()) break;
        if (source_) {
            source_(written_, room);
        } else {
            payload_.fill(written_, room);
        }
        if (hashing_) hash_.update(room);
        written_ += room.size();
        c.commit(id, room.size(), written_ == limit_);
    }
}

}  // namespace ndm::workload
