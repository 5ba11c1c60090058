// workload::BulkWriter: how far the payload runs ahead of the transport.
#include <doctest/doctest.h>

#include "connection_pair.hpp"
#include "ndm/bulk_writer.hpp"

using namespace ndm;
using workload::BulkWriter;

namespace {
constexpr std::uint64_t kNoLimit = BulkWriter::kUnlimited / 2;  // flow control far ahead
}  // namespace

TEST_CASE("BulkWriter writes no more than kLead beyond what was sent, however large the window") {
    test::ConnectionPair p;
    p.start();
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    BulkWriter w(7);
    ConnectionStats st;
    st.cwnd = 64u << 20;  // 2 cwnd would be 128 MiB, the send buffer 16 MiB
    w.write(*p.client, id, st);
    CHECK(w.written() == BulkWriter::kLead);
    w.write(*p.client, id, st);  // nothing sent yet: nothing more
    CHECK(w.written() == BulkWriter::kLead);
    st.stream_bytes_sent = 300000;
    CHECK(w.allowance(st, kNoLimit, BulkWriter::kUnlimited) == 300000);
    w.write(*p.client, id, st);
    CHECK(w.written() == BulkWriter::kLead + 300000);
    // The window still bounds what is outstanding beyond the acknowledged.
    st.cwnd = 100000;
    st.stream_bytes_sent = st.stream_bytes_acked = 0;
    CHECK(w.allowance(st, kNoLimit, BulkWriter::kUnlimited) == 0);
    st.stream_bytes_sent = st.stream_bytes_acked = w.written();
    CHECK(w.allowance(st, kNoLimit, BulkWriter::kUnlimited) == 4 * BulkWriter::kChunk);  // max(2 cwnd, 4 chunks)
    CHECK(w.allowance(st, kNoLimit, w.written() + 1000) == 1000);                      // and `upto`
    // And flow control: no more than a chunk past what the peer allows now.
    CHECK(w.allowance(st, w.written() + 5000, BulkWriter::kUnlimited) == 5000 + BulkWriter::kChunk);
    CHECK(w.allowance(st, w.written() - BulkWriter::kChunk, BulkWriter::kUnlimited) == 0);
}

TEST_CASE("BulkWriter writes no more than a chunk beyond the peer's flow-control limit") {
    test::ConnectionPair p;
    p.server_cfg.initial_max_stream_data = 100000;  // the peer's window for our stream
    p.start();
    REQUIRE(p.handshake());
    const StreamId id = *p.client->open_stream();
    REQUIRE(p.client->stream_send_limit(id) == 100000);
    BulkWriter w(7);
    ConnectionStats st;
    st.cwnd = 64u << 20;
    w.write(*p.client, id, st);
    CHECK(w.written() == 100000 + BulkWriter::kChunk);
    CHECK(p.client->stream_send_limit(id + 4) == 0);  // a stream never opened
}
