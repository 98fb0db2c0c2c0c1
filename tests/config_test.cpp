// config: fields, named keys, environment, file; clear errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "troupe/troupe.hpp"

TEST(config, defaults) {
  troupe::config c;
  EXPECT_EQ(c.workers, 0u);
  EXPECT_EQ(c.effective_workers(), troupe::available_cores().size());
  EXPECT_EQ(c.polling, troupe::polling::moderate);
  EXPECT_GE(c.throughput, 1u);
}

TEST(config, set_by_name) {
  troupe::config c;
  c.set("workers", "3").set("polling", "relaxed").set("throughput", "7").set("worker-affinity", "<0>");
  c.set("mailbox-soft-limit", "64");
  EXPECT_EQ(c.mailbox_soft_limit, 64u);
  EXPECT_EQ(c.workers, 3u);
  EXPECT_EQ(c.polling, troupe::polling::relaxed);
  EXPECT_EQ(c.throughput, 7u);
  EXPECT_EQ(c.worker_affinity, "<0>");
}

TEST(config, bad_values_name_key_value_and_problem) {
  auto expect_error = [](const char* key, const char* value, const char* fragment) {
    try {
      troupe::config{}.set(key, value);
      ADD_FAILURE() << key << "=" << value << " accepted";
    } catch (const troupe::config_error& e) {
      std::string what = e.what();
      EXPECT_EQ(e.key(), key);
      EXPECT_NE(what.find(value), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << what;
    }
  };
  expect_error("workers", "many", "integer");
  expect_error("workers", "-1", "integer");
  expect_error("workers", "99999", "between");
  expect_error("throughput", "0", "between");
  expect_error("mailbox-soft-limit", "0", "between");
  expect_error("polling", "fast", "aggressive, moderate or relaxed");
  expect_error("worker-affinity", "<0", "position");
  expect_error("colour", "blue", "unknown key");
}

TEST(config, fields_out_of_range_are_rejected_when_the_system_is_made) {
  auto expect_error = [](troupe::config c, const char* key) {
    try {
      troupe::actor_system sys{c};
      ADD_FAILURE() << key << " accepted";
    } catch (const troupe::config_error& e) {
      EXPECT_EQ(e.key(), key) << e.what();
    }
  };
  expect_error(troupe::config{.throughput = 0}, "throughput");
  expect_error(troupe::config{.mailbox_soft_limit = 0}, "mailbox-soft-limit");
  expect_error(troupe::config{.workers = 100'000}, "workers");
  expect_error(troupe::config{.worker_affinity = "<0-"}, "worker-affinity");
  expect_error(troupe::config{.detached_affinity = "<x>"}, "detached-affinity");
  EXPECT_NO_THROW(troupe::config{.workers = 1}.validate());
}

TEST(config, from_environment) {
  setenv("TROUPE_WORKERS", "2", 1);
  setenv("TROUPE_POLLING", "aggressive", 1);
  troupe::config c;
  c.load_env();
  unsetenv("TROUPE_WORKERS");
  unsetenv("TROUPE_POLLING");
  EXPECT_EQ(c.workers, 2u);
  EXPECT_EQ(c.polling, troupe::polling::aggressive);
}

TEST(config, from_file_with_line_numbers_in_errors) {
  auto path = ::testing::TempDir() + "troupe_config_test.conf";
  {
    std::ofstream out{path};
    out << "# comment\nworkers = 2\n\nthroughput=50  # trailing comment\n";
  }
  troupe::config c;
  c.load_file(path);
  EXPECT_EQ(c.workers, 2u);
  EXPECT_EQ(c.throughput, 50u);
  {
    std::ofstream out{path};
    out << "workers = 2\npolling = sometimes\n";
  }
  try {
    troupe::config{}.load_file(path);
    FAIL();
  } catch (const troupe::config_error& e) {
    EXPECT_NE(std::string{e.what()}.find("line 2"), std::string::npos) << e.what();
  }
  {
    std::ofstream out{path};
    out << "just words\n";
  }
  EXPECT_THROW(troupe::config{}.load_file(path), troupe::config_error);
  EXPECT_THROW(troupe::config{}.load_file(path + ".missing"), troupe::config_error);
}
