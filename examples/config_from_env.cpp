// config_from_env: configuration as data. Knobs come from TROUPE_* environment
// variables and from "key=value" arguments; a bad value is a config_error that
// names the key, the value and the problem.
//   TROUPE_POLLING=relaxed troupe_example_config_from_env workers=2 throughput=50
#include <troupe/troupe.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  setenv("TROUPE_WORKERS", "2", /*overwrite=*/0);  // a default, unless the shell set one
  // [config]
  troupe::config cfg;
  try {
    cfg.load_env();                   // TROUPE_WORKERS, TROUPE_POLLING, TROUPE_THROUGHPUT, TROUPE_*_AFFINITY
    for (int i = 1; i < argc; ++i) {  // then key=value arguments, by name
      std::string arg = argv[i];
      auto eq = arg.find('=');
      cfg.set(arg.substr(0, eq), eq == std::string::npos ? "" : arg.substr(eq + 1));
    }
  } catch (const troupe::config_error& e) {
    std::cerr << "bad configuration: " << e.what() << '\n';
    return 2;
  }
  // [/config]
  // What a mistake looks like: the error names the key, the value and the problem.
  std::string rejected;
  try {
    troupe::config{}.set("worker-affinity", "<0> <1-x>");
  } catch (const troupe::config_error& e) {
    rejected = e.what();
    std::cout << "rejected as expected: " << rejected << '\n';
  }
  troupe::actor_system sys{cfg};
  std::cout << "workers: " << sys.worker_count() << ", polling: " << troupe::to_string(cfg.polling)
            << ", throughput: " << cfg.throughput << '\n';
  return sys.worker_count() == cfg.effective_workers() && rejected.find("position 7") != std::string::npos ? 0 : 1;
}
