// skip_test() and the listener that reports skipped cases (tests/support/skip.hpp).
#include "skip.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <ostream>
#include <vector>

#include <doctest/doctest.h>

namespace ndm::test {
namespace {

std::string g_current;                                  // name of the running case
std::map<std::string, std::vector<std::string>> g_skipped;  // case -> reasons

// Follows the running case for skip_test() and prints the summary of skips.
class SkipListener final : public doctest::IReporter {
public:
    explicit SkipListener(const doctest::ContextOptions& opt) : out_(*opt.cout) {}
    void test_case_start(const doctest::TestCaseData& tc) override { g_current = tc.m_name; }
    void test_case_end(const doctest::CurrentTestCaseStats&) override { g_current.clear(); }
    void test_run_end(const doctest::TestRunStats&) override {
        if (g_skipped.empty()) return;
        out_ << "[ndm] " << g_skipped.size() << " test case(s) skipped (not all of them could run here):\n";
        for (const auto& [name, reasons] : g_skipped) {
            out_ << "[ndm]   " << name << ":";
            for (const auto& r : reasons) out_ << " " << r << ";";
            out_ << "\n";
        }
    }
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}

private:
    std::ostream& out_;
};

}  // namespace

REGISTER_LISTENER("ndm-skips", 1, SkipListener);

void skip_test(const std::string& reason, std::source_location where) {
    ADD_MESSAGE_AT(where.file_name(), static_cast<int>(where.line()), "SKIP: " << reason);
    auto& reasons = g_skipped[g_current];
    if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) reasons.push_back(reason);
}

int exit_code_after_run(int rc) {
    const char* code = std::getenv("NDM_TEST_SKIP_EXIT_CODE");
    if (rc != 0 || g_skipped.empty() || code == nullptr || *code == '\0') return rc;
    const int skip_code = std::atoi(code);
    return skip_code > 0 ? skip_code : rc;
}

}  // namespace ndm::test
