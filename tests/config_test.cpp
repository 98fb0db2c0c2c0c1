// config: fields, named keys, environment, file; clear errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

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
  expect_error("throughput", "0", "must be at least 1");
  expect_error("mailbox-soft-limit", "0", "must be at least 1");
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
    EXPECT_EQ(e.key(), "polling");
    EXPECT_EQ(e.value(), "sometimes");
  }
  // The key and the value once each, then where, then what is wrong.
  {
    std::ofstream out{path};
    out << "throughput = abc\n";
  }
  try {
    troupe::config{}.load_file(path);
    FAIL();
  } catch (const troupe::config_error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, "config key 'throughput' with value \"abc\": " + path + " line 1: expected a non-negative integer");
    EXPECT_EQ(e.problem(), path + " line 1: expected a non-negative integer");
  }
  {
    std::ofstream out{path};
    out << "just words\n";
  }
  EXPECT_THROW(troupe::config{}.load_file(path), troupe::config_error);
  EXPECT_THROW(troupe::config{}.load_file(path + ".missing"), troupe::config_error);
}

// A limit of 0 used to report "must be between 1 and 18446744073709551615".
TEST(config, a_zero_limit_says_at_least_one) {
  for (const char* key : {"throughput", "mailbox-soft-limit"}) {
    try {
      troupe::config{}.set(key, "0");
      ADD_FAILURE() << key << " = 0 accepted";
    } catch (const troupe::config_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("must be at least 1"), std::string::npos) << what;
      EXPECT_EQ(what.find("18446744073709551615"), std::string::npos) << what;
    }
  }
}

// A long bad input is shown once, as a bounded excerpt around the problem;
// every byte is escaped, so an embedded NUL does not cut the message short.
TEST(config, errors_show_a_bounded_escaped_excerpt_of_the_input) {
  std::string long_affinity;
  for (int i = 0; i < 2000; ++i) long_affinity += "<0> ";
  long_affinity += "<0-x>";  // the problem, at the very end of ~8 kB
  try {
    troupe::config{}.set("worker-affinity", long_affinity);
    ADD_FAILURE() << "accepted";
  } catch (const troupe::config_error& e) {
    const std::string what = e.what();
    EXPECT_LT(what.size(), 400u) << what.substr(0, 500);
    EXPECT_NE(what.find("<0-x>"), std::string::npos) << what;  // the excerpt shows the problem
    EXPECT_NE(what.find("position 8003"), std::string::npos) << what;
    EXPECT_NE(what.find("8005 bytes"), std::string::npos) << what;
    EXPECT_EQ(e.value(), long_affinity);  // the whole value stays available
  }
  try {
    (void)troupe::affinity::parse(long_affinity);
    ADD_FAILURE() << "accepted";
  } catch (const troupe::affinity_error& e) {
    EXPECT_LT(std::string{e.what()}.size(), 300u);
  }
  const std::string with_nul{"<0>\0<1>", 7};
  try {
    troupe::config{}.set("worker-affinity", with_nul);
    ADD_FAILURE() << "accepted";
  } catch (const troupe::config_error& e) {
    const std::string what = e.what();  // up to the first NUL, as printed
    EXPECT_NE(what.find("\\x00"), std::string::npos) << what;
    EXPECT_NE(what.find("position 3"), std::string::npos) << what;
  }
}

// TROUPE_* variables that a config does not read are named, and an
// actor_system made from such a config says so on stderr.
TEST(config, environment_variables_that_are_not_read_are_reported) {
  setenv("TROUPE_THROUGHPUT", "7", 1);
  const auto ignored = troupe::config{}.ignored_env();
  const auto read = troupe::config{}.load_env().ignored_env();
  ::testing::internal::CaptureStderr();
  {
    troupe::actor_system sys{troupe::config{.workers = 1}};
  }
  const std::string said = ::testing::internal::GetCapturedStderr();
  unsetenv("TROUPE_THROUGHPUT");
  EXPECT_EQ(ignored, std::vector<std::string>{"TROUPE_THROUGHPUT"});
  EXPECT_TRUE(read.empty());
  EXPECT_NE(said.find("TROUPE_THROUGHPUT"), std::string::npos) << said;
  EXPECT_NE(said.find("load_env"), std::string::npos) << said;
  EXPECT_TRUE(troupe::config{}.ignored_env().empty());
}
