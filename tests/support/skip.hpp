// Skipping a doctest case that cannot run on this machine (io_uring disabled,
// no IPv6 loopback ...): call skip_test(reason) and return from the case (or
// SUBCASE). Skips are reported, never counted as passes:
// - CTest runs every case alone (doctest_discover_tests in tests/CMakeLists.txt)
//   with NDM_TEST_SKIP_EXIT_CODE=77 and SKIP_RETURN_CODE 77, so a case that
//   skipped anything and failed nothing exits 77 and CTest lists it as skipped;
// - run by hand, ndm_tests prints every skipped case with its reasons after the
//   run and exits as doctest does (0 when nothing failed).
// A case that skips one SUBCASE (the io_uring half of FOR_EACH_BACKEND) and runs
// the others counts as skipped: not all of it could run here.
#pragma once

#include <source_location>
#include <string>

namespace ndm::test {

// Records `reason` for the running test case and prints it as a doctest message
// at the caller's line.
void skip_test(const std::string& reason, std::source_location where = std::source_location::current());

// main(): doctest's result `rc`, turned into NDM_TEST_SKIP_EXIT_CODE when a case
// skipped and nothing failed.
int exit_code_after_run(int rc);

}  // namespace ndm::test
