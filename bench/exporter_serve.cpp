// Serves the exporter with a realistic series set for bench/exporter_scrape.sh: the daemon's health and
// BUNDLE's headline series under N configurations (the default bound is 3). Prints the bound port on
// stdout, then serves until SIGTERM or SIGINT.
//   exporter_serve BUNDLE [LISTEN=127.0.0.1:0] [CONFIGURATIONS=3]
#include <signal.h>

#include <chrono>
#include <iostream>
#include <string>

#include "core/bundle_io.hpp"
#include "daemon/exporter/exporter.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: exporter_serve BUNDLE [LISTEN] [CONFIGURATIONS]\n";
    return 2;
  }
  try {
    // Blocked before the exposer starts its threads, so that they inherit the mask and sigwait gets them.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);

    schedlab::ExporterSettings settings;
    settings.listen = argc > 2 ? argv[2] : "127.0.0.1:0";
    const int configurations = argc > 3 ? std::stoi(argv[3]) : 3;
    settings.configurations_per_host = configurations;
    schedlab::Exporter exporter(settings);
    const auto bundle = schedlab::load_bundle(argv[1]);
    exporter.set_state(schedlab::DaemonState::kRunning);
    exporter.set_current_step("t1/configuration-1/wakeup", 1, 2 * configurations);
    exporter.set_next_run(std::chrono::system_clock::now() + std::chrono::hours(24));
    for (int c = 1; c <= configurations; ++c) exporter.publish(bundle, "configuration-" + std::to_string(c));
    std::cout << exporter.port() << std::endl;
    int sig = 0;
    sigwait(&stop, &sig);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "exporter_serve: " << e.what() << "\n";
    return 1;
  }
}
