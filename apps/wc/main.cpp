// troupe-wc: Word Count on troupe's streaming layer (see docs/apps.md).
#include "wc.hpp"

int main(int argc, char** argv) {
  return troupe_apps::main_of(
      "troupe-wc", troupe_apps::wc::operators, TROUPE_APPS_DATA "/book.dat", argc, argv,
      [](const troupe_apps::cli& c) {
        troupe::actor_system sys{troupe_apps::app_config()};
        return troupe_apps::wc::run(sys, c).result;
      },
      troupe_apps::split_flags());
}
