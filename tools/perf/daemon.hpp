// ndm-recv -D and --pidfile, as iperf3's: the server detaches from the
// terminal and runs in the background, its process id in a file that is
// removed when it exits.
#pragma once

#include <memory>
#include <string>

namespace ndm::tools {

class PidFile {
public:
    // Creates (or truncates) `path` now, so a bad path is bad input before
    // the server detaches; throws std::invalid_argument naming it.
    explicit PidFile(std::string path);
    // Writes this process's id (call it after daemonize(), from the child).
    void write() const;
    ~PidFile();  // removes the file
    PidFile(const PidFile&) = delete;
    PidFile& operator=(const PidFile&) = delete;

private:
    std::string path_;
};

// Forks into the background, as daemon(3) with the working directory kept:
// the parent exits 0 at once; in the child, standard input and output are
// /dev/null (the output goes to --logfile, else nowhere, as iperf3's -D) and
// standard error goes to `logfile` when one is given, else /dev/null.
// Throws std::runtime_error when the fork or the redirection fails.
void daemonize(const std::string& logfile);

}  // namespace ndm::tools
